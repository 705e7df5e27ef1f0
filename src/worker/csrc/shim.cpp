// llmprof shim: implements shim.h over libtorch (Kineto profiler, RecordFunction user scopes,
// versions of the loaded libraries, CUDA events, caching-allocator statistics; CUDA graphs are
// in cuda_graph.cpp). Every entry point catches all C++ exceptions and turns them into -1 plus
// a per-thread message (see llmprof_last_error).
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include "shim.h"
#include "shim_guard.h"

#include <c10/cuda/CUDAEvent.h>
#include <ATen/record_function.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <caffe2/core/common.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using llmprof::g_last_error;
using llmprof::guarded;
using llmprof::set_error;

std::string shapes_to_string(const c10::ArrayRef<std::vector<int64_t>>& shapes) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i > 0) out << ", ";
    out << "[";
    for (size_t j = 0; j < shapes[i].size(); ++j) {
      if (j > 0) out << ", ";
      out << shapes[i][j];
    }
    out << "]";
  }
  out << "]";
  return out.str();
}

std::string strings_to_list(const c10::ArrayRef<std::string>& items) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out << ", ";
    out << items[i];
  }
  out << "]";
  return out.str();
}

std::string join_lines(const c10::ArrayRef<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += '\n';
    out += items[i];
  }
  return out;
}

}  // namespace

struct llmprof_profile {
  std::unique_ptr<torch::autograd::profiler::ProfilerResult> result;
  // Owned copies of the strings that llmprof_event points into, one entry per event.
  std::vector<std::string> names, shapes, dtypes, stacks;
  std::vector<llmprof_event> events;
};

struct llmprof_scope {
  at::RecordFunction record{at::RecordScope::USER_SCOPE};
};

struct llmprof_cuda_event {
  c10::cuda::CUDAEvent event{cudaEventDefault};
};

extern "C" {

size_t llmprof_last_error(char* buf, size_t buf_len) {
  const std::string& msg = g_last_error;
  if (buf != nullptr && buf_len > 0) {
    size_t n = msg.size() < buf_len - 1 ? msg.size() : buf_len - 1;
    std::memcpy(buf, msg.data(), n);
    buf[n] = '\0';
  }
  return msg.size();
}

// ---- Kineto ----------------------------------------------------------------------------------

namespace {
// Without a CUDA device, libkineto's first start logs `gpuGetDeviceCount failed with code 35`
// (and, when the profiler starts on another thread than libtorch registered it from, `External
// init callback must run in same thread`) as errors: noise in every CPU run and test. Its log
// level is read from KINETO_LOG_LEVEL at that first start, so it is set here, once, before it
// (level 5 is above ERROR). A level the user set is kept. Every process that profiles starts
// here: the worker, the test harnesses, the debug commands.
void quiet_kineto_without_gpu() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("KINETO_LOG_LEVEL") == nullptr && llmprof_cuda_device_count() == 0) {
      setenv("KINETO_LOG_LEVEL", "5", 0);
    }
  });
}
}  // namespace

int llmprof_profiler_start(const llmprof_profiler_config* config) {
  return guarded("profiler_start", [&] {
    TORCH_CHECK(config != nullptr, "config is NULL");
    quiet_kineto_without_gpu();
    using torch::profiler::impl::ActivityType;
    using torch::profiler::impl::ProfilerConfig;
    using torch::profiler::impl::ProfilerState;
    ProfilerConfig cfg(ProfilerState::KINETO, config->record_shapes != 0,
                       config->profile_memory != 0, config->with_stack != 0,
                       config->with_flops != 0, config->with_modules != 0);
    std::set<ActivityType> activities;
    if (config->activity_cpu != 0) activities.insert(ActivityType::CPU);
    if (config->activity_cuda != 0) activities.insert(ActivityType::CUDA);
    TORCH_CHECK(!activities.empty(), "no profiler activity selected");
    torch::autograd::profiler::prepareProfiler(cfg, activities);
    torch::autograd::profiler::enableProfiler(cfg, activities);
  });
}

int llmprof_profiler_stop(llmprof_profile** out) {
  return guarded("profiler_stop", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    *out = nullptr;
    auto profile = std::make_unique<llmprof_profile>();
    profile->result = torch::autograd::profiler::disableProfiler();
    TORCH_CHECK(profile->result != nullptr, "disableProfiler returned no result");
    const auto& events = profile->result->events();
    const size_t n = events.size();
    profile->names.reserve(n);
    profile->shapes.reserve(n);
    profile->dtypes.reserve(n);
    profile->stacks.reserve(n);
    profile->events.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const auto& ev = events[i];
      profile->names.push_back(ev.name());
      profile->shapes.push_back(ev.hasShapes() ? shapes_to_string(ev.shapes()) : std::string());
      profile->dtypes.push_back(ev.hasTypes() ? strings_to_list(ev.dtypes()) : std::string());
      profile->stacks.push_back(ev.hasStack() ? join_lines(ev.stack()) : std::string());
      llmprof_event& e = profile->events[i];
      e.device_type = static_cast<int32_t>(ev.deviceType());
      e.device_index = ev.deviceIndex();
      e.activity_type = ev.activityType();
      e.scope = ev.scope();
      e.is_async = ev.isAsync() ? 1 : 0;
      e.start_ns = ev.startNs();
      e.duration_ns = ev.durationNs();
      e.flops = ev.flops();
      e.correlation_id = ev.correlationId();
      e.linked_correlation_id = ev.linkedCorrelationId();
      e.start_thread_id = ev.startThreadId();
      e.device_resource_id = ev.deviceResourceId();
      e.sequence_nr = ev.sequenceNr();
      e.n_bytes = ev.nBytes();
    }
    // The string vectors no longer grow: their c_str() pointers are stable from here on.
    for (size_t i = 0; i < n; ++i) {
      llmprof_event& e = profile->events[i];
      e.name = profile->names[i].c_str();
      e.input_shapes = profile->shapes[i].c_str();
      e.input_dtypes = profile->dtypes[i].c_str();
      e.stack = profile->stacks[i].c_str();
    }
    *out = profile.release();
  });
}

size_t llmprof_profile_len(const llmprof_profile* profile) {
  return profile == nullptr ? 0 : profile->events.size();
}

int llmprof_profile_event(const llmprof_profile* profile, size_t index, llmprof_event* out) {
  return guarded("profile_event", [&] {
    TORCH_CHECK(profile != nullptr && out != nullptr, "NULL argument");
    TORCH_CHECK(index < profile->events.size(), "event index ", index, " out of range (",
                profile->events.size(), " events)");
    *out = profile->events[index];
  });
}

uint64_t llmprof_profile_trace_start_ns(const llmprof_profile* profile) {
  return profile == nullptr ? 0 : profile->result->trace_start_ns();
}

int llmprof_profile_save(llmprof_profile* profile, const char* path) {
  return guarded("profile_save", [&] {
    TORCH_CHECK(profile != nullptr && path != nullptr, "NULL argument");
    profile->result->save(path);
  });
}

void llmprof_profile_free(llmprof_profile* profile) {
  try {
    delete profile;
  } catch (...) {
  }
}

// ---- User scopes -----------------------------------------------------------------------------

int llmprof_scope_begin(const char* name, llmprof_scope** out) {
  return guarded("scope_begin", [&] {
    TORCH_CHECK(name != nullptr && out != nullptr, "NULL argument");
    *out = nullptr;
    auto scope = std::make_unique<llmprof_scope>();
    if (scope->record.isActive()) {
      scope->record.before(std::string_view(name));
    }
    *out = scope.release();
  });
}

void llmprof_scope_end(llmprof_scope* scope) {
  if (scope == nullptr) return;
  guarded("scope_end", [&] { scope->record.end(); });
  try {
    delete scope;
  } catch (...) {
  }
}

// ---- Versions ----------------------------------------------------------------------------------

void llmprof_runtime_versions_read(llmprof_runtime_versions* out) {
  if (out == nullptr) return;
  *out = llmprof_runtime_versions{-1, -1, -1, 0, 0};
  try {
    int value = 0;
    if (cudaRuntimeGetVersion(&value) == cudaSuccess) out->cuda_runtime = value;
    value = 0;
    if (cudaDriverGetVersion(&value) == cudaSuccess) out->cuda_driver = value;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    out->cuda_device_error = static_cast<int32_t>(err);
    out->cuda_device_count = err == cudaSuccess ? count : 0;
    if (err != cudaSuccess) (void)cudaGetLastError();  // do not leave the error sticky
  } catch (...) {
  }
  try {
    // The real CUDAHooks once libtorch_cuda is loaded (the worker forces it in); it calls the
    // loaded cuDNN's cudnnGetVersion(), which needs no GPU.
    const long v = at::detail::getCUDAHooks().versionRuntimeCuDNN();
    if (v > 0) out->cudnn = v;
  } catch (...) {
  }
}

int64_t llmprof_torch_build_option(const char* key, char* buf, size_t buf_len) {
  try {
    if (key == nullptr) return -1;
    const auto& options = caffe2::GetBuildOptions();
    const auto it = options.find(key);
    if (it == options.end()) return -1;
    const std::string& value = it->second;
    if (buf != nullptr && buf_len > 0) {
      const size_t n = value.size() < buf_len - 1 ? value.size() : buf_len - 1;
      std::memcpy(buf, value.data(), n);
      buf[n] = '\0';
    }
    return static_cast<int64_t>(value.size());
  } catch (...) {
    return -1;
  }
}

const char* llmprof_cuda_error_string(int32_t code) {
  const char* text = cudaGetErrorString(static_cast<cudaError_t>(code));
  return text != nullptr ? text : "unknown CUDA error";
}

// ---- CUDA ------------------------------------------------------------------------------------

int llmprof_cuda_device_count(void) {
  try {
    return static_cast<int>(c10::cuda::device_count());
  } catch (...) {
    return 0;
  }
}

int llmprof_cuda_current_device(int32_t* out) {
  return guarded("cuda_current_device", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    *out = c10::cuda::current_device();
  });
}

int llmprof_cuda_set_current_device(int32_t device) {
  return guarded("cuda_set_current_device", [&] {
    TORCH_CHECK(device >= 0 && device < c10::cuda::device_count(), "invalid CUDA device ", device);
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(device));
  });
}

int llmprof_cuda_sm_count(int32_t device, int32_t* out) {
  return guarded("cuda_sm_count", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    TORCH_CHECK(device >= 0 && device < c10::cuda::device_count(), "invalid CUDA device ", device);
    int value = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device));
    *out = value;
  });
}

int llmprof_cuda_compute_capability(int32_t device, int32_t* out) {
  return guarded("cuda_compute_capability", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    TORCH_CHECK(device >= 0 && device < c10::cuda::device_count(), "invalid CUDA device ", device);
    int major = 0;
    int minor = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    *out = major * 10 + minor;
  });
}

int llmprof_cuda_clock_rate_khz(int32_t device, int32_t* out) {
  return guarded("cuda_clock_rate_khz", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    TORCH_CHECK(device >= 0 && device < c10::cuda::device_count(), "invalid CUDA device ", device);
    int value = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrClockRate, device));
    *out = value;
  });
}

int llmprof_cuda_stream_synchronize(void) {
  return guarded("cuda_stream_synchronize",
                 [&] { c10::cuda::getCurrentCUDAStream().synchronize(); });
}

int llmprof_cuda_device_synchronize(void) {
  return guarded("cuda_device_synchronize", [&] { c10::cuda::device_synchronize(); });
}

int llmprof_set_allow_tf32(int cublas, int cudnn) {
  return guarded("set_allow_tf32", [&] {
    at::globalContext().setAllowTF32CuBLAS(cublas != 0);
    at::globalContext().setAllowTF32CuDNN(cudnn != 0);
  });
}

int llmprof_cuda_event_create(llmprof_cuda_event** out) {
  return guarded("cuda_event_create", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    *out = nullptr;
    TORCH_CHECK(c10::cuda::device_count() > 0, "no CUDA device");
    *out = new llmprof_cuda_event();
  });
}

int llmprof_cuda_event_record(llmprof_cuda_event* event) {
  return guarded("cuda_event_record", [&] {
    TORCH_CHECK(event != nullptr, "event is NULL");
    event->event.record(c10::cuda::getCurrentCUDAStream());
  });
}

int llmprof_cuda_event_synchronize(llmprof_cuda_event* event) {
  return guarded("cuda_event_synchronize", [&] {
    TORCH_CHECK(event != nullptr, "event is NULL");
    event->event.synchronize();
  });
}

int llmprof_cuda_event_elapsed_ms(const llmprof_cuda_event* start, const llmprof_cuda_event* end,
                                  float* out) {
  return guarded("cuda_event_elapsed_ms", [&] {
    TORCH_CHECK(start != nullptr && end != nullptr && out != nullptr, "NULL argument");
    *out = start->event.elapsed_time(end->event);
  });
}

void llmprof_cuda_event_destroy(llmprof_cuda_event* event) {
  try {
    delete event;
  } catch (...) {
  }
}

int llmprof_cuda_allocator_stats(int32_t device, llmprof_allocator_stats* out) {
  return guarded("cuda_allocator_stats", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    TORCH_CHECK(device >= 0 && device < c10::cuda::device_count(), "invalid CUDA device ", device);
    const auto stats =
        c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
    constexpr auto agg = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    out->allocated_bytes_current = stats.allocated_bytes[agg].current;
    out->allocated_bytes_peak = stats.allocated_bytes[agg].peak;
    out->reserved_bytes_current = stats.reserved_bytes[agg].current;
    out->reserved_bytes_peak = stats.reserved_bytes[agg].peak;
    out->active_bytes_current = stats.active_bytes[agg].current;
    out->active_bytes_peak = stats.active_bytes[agg].peak;
    out->requested_bytes_current = stats.requested_bytes[agg].current;
    out->requested_bytes_peak = stats.requested_bytes[agg].peak;
    out->num_alloc_retries = stats.num_alloc_retries;
    out->num_ooms = stats.num_ooms;
  });
}

int llmprof_cuda_allocator_reset_peak(int32_t device) {
  return guarded("cuda_allocator_reset_peak", [&] {
    TORCH_CHECK(device >= 0 && device < c10::cuda::device_count(), "invalid CUDA device ", device);
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
  });
}

}  // extern "C"
