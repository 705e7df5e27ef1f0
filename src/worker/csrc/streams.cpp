// A second CUDA stream for work that may overlap the current stream's (the vision pass runs a
// page's global view and its crops side by side): fork makes it wait for what the current
// stream has queued so far, enter/leave make it the current stream for libtorch and llmprof's
// kernels, join makes the current stream wait for what it has queued. Entry points follow the
// shim's error convention (shim_guard.h).
#include "shim.h"
#include "shim_guard.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <optional>

using llmprof::guarded;

struct llmprof_side_stream {
  c10::DeviceIndex device = 0;
  cudaStream_t stream = nullptr;
  // Orderings only: no timing, so recording them costs no timestamp.
  cudaEvent_t fork_event = nullptr;
  cudaEvent_t join_event = nullptr;
  // The stream that was current before enter, restored by leave.
  std::optional<c10::cuda::CUDAStream> previous;

  c10::cuda::CUDAStream as_c10() const {
    return c10::cuda::getStreamFromExternal(stream, device);
  }
};

namespace {

void release(llmprof_side_stream* s) {
  if (s == nullptr) return;
  c10::cuda::CUDAGuard guard(s->device);
  // Queued work must not outlive the stream it runs on.
  if (s->stream != nullptr) {
    cudaStreamSynchronize(s->stream);
    cudaStreamDestroy(s->stream);
  }
  if (s->fork_event != nullptr) cudaEventDestroy(s->fork_event);
  if (s->join_event != nullptr) cudaEventDestroy(s->join_event);
  (void)cudaGetLastError();
  delete s;
}

// `waiter` waits for everything `signaller` has queued so far, through `event`.
void order(cudaEvent_t event, cudaStream_t signaller, cudaStream_t waiter) {
  C10_CUDA_CHECK(cudaEventRecord(event, signaller));
  C10_CUDA_CHECK(cudaStreamWaitEvent(waiter, event, 0));
}

}  // namespace

extern "C" {

int llmprof_side_stream_create(int64_t device, llmprof_side_stream** out) {
  return guarded("side_stream_create", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    *out = nullptr;
    TORCH_CHECK(device >= 0 && device < c10::cuda::device_count(), "no CUDA device ", device);
    auto* s = new llmprof_side_stream();
    try {
      s->device = static_cast<c10::DeviceIndex>(device);
      c10::cuda::CUDAGuard guard(s->device);
      C10_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
      C10_CUDA_CHECK(cudaEventCreateWithFlags(&s->fork_event, cudaEventDisableTiming));
      C10_CUDA_CHECK(cudaEventCreateWithFlags(&s->join_event, cudaEventDisableTiming));
    } catch (...) {
      release(s);
      throw;
    }
    *out = s;
  });
}

int llmprof_side_stream_fork(llmprof_side_stream* s) {
  return guarded("side_stream_fork", [&] {
    TORCH_CHECK(s != nullptr, "side stream is NULL");
    TORCH_CHECK(!s->previous.has_value(), "fork while the side stream is current");
    order(s->fork_event, c10::cuda::getCurrentCUDAStream(s->device).stream(), s->stream);
  });
}

int llmprof_side_stream_enter(llmprof_side_stream* s) {
  return guarded("side_stream_enter", [&] {
    TORCH_CHECK(s != nullptr, "side stream is NULL");
    TORCH_CHECK(!s->previous.has_value(), "the side stream is already current");
    s->previous = c10::cuda::getCurrentCUDAStream(s->device);
    c10::cuda::setCurrentCUDAStream(s->as_c10());
  });
}

int llmprof_side_stream_leave(llmprof_side_stream* s) {
  return guarded("side_stream_leave", [&] {
    TORCH_CHECK(s != nullptr, "side stream is NULL");
    TORCH_CHECK(s->previous.has_value(), "the side stream is not current");
    c10::cuda::setCurrentCUDAStream(*s->previous);
    s->previous.reset();
  });
}

int llmprof_side_stream_join(llmprof_side_stream* s) {
  return guarded("side_stream_join", [&] {
    TORCH_CHECK(s != nullptr, "side stream is NULL");
    TORCH_CHECK(!s->previous.has_value(), "join while the side stream is current");
    order(s->join_event, s->stream, c10::cuda::getCurrentCUDAStream(s->device).stream());
  });
}

int llmprof_cuda_stream_capturing(int* out) {
  return guarded("cuda_stream_capturing", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    C10_CUDA_CHECK(cudaStreamIsCapturing(c10::cuda::getCurrentCUDAStream().stream(), &status));
    *out = status == cudaStreamCaptureStatusActive ? 1 : 0;
  });
}

void llmprof_side_stream_destroy(llmprof_side_stream* s) {
  try {
    if (s != nullptr && s->previous.has_value()) c10::cuda::setCurrentCUDAStream(*s->previous);
    release(s);
  } catch (...) {
  }
}

}  // extern "C"
