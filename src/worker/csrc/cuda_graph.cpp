// CUDA graphs (at::cuda::CUDAGraph captured on a pool stream) and the host-to-device copies
// captured in them whose source changes per replay. Follows the shim's error convention
// (shim_guard.h).
#include "graph_nodes.h"
#include "shim.h"
#include "shim_guard.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/cuda/CachingHostAllocator.h>
#include <c10/core/Allocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <optional>

using llmprof::guarded;

namespace {
std::atomic<uint64_t> g_next_graph_serial{1};
}

struct llmprof_cuda_graph {
  explicit llmprof_cuda_graph(bool keep)
      : graph(keep), keep_graph(keep), serial(g_next_graph_serial.fetch_add(1)) {}
  // With keep_graph, the graph itself is kept after instantiation: captured uploads name its
  // nodes.
  at::cuda::CUDAGraph graph;
  const bool keep_graph;
  std::optional<c10::cuda::CUDAStream> previous_stream;
  // Process-unique; each replay names it (llmprof::graph_replay#<serial>) for Kineto.
  const uint64_t serial;
  // Which module added each node (graph_nodes.h), taken before the capture ends.
  llmprof::CaptureRecord record;
};

extern "C" {

int llmprof_cuda_graph_create(int keep_graph, llmprof_cuda_graph** out) {
  return guarded("cuda_graph_create", [&] {
    TORCH_CHECK(out != nullptr, "out is NULL");
    *out = nullptr;
    TORCH_CHECK(c10::cuda::device_count() > 0, "no CUDA device");
    *out = new llmprof_cuda_graph(keep_graph != 0);
  });
}

int llmprof_cuda_graph_capture_begin(llmprof_cuda_graph* graph,
                                     llmprof_cuda_graph* share_pool_with) {
  return guarded("cuda_graph_capture_begin", [&] {
    TORCH_CHECK(graph != nullptr, "graph is NULL");
    TORCH_CHECK(!graph->previous_stream.has_value(), "capture already in progress");
    const at::cuda::MempoolId_t pool =
        share_pool_with != nullptr ? share_pool_with->graph.pool() : at::cuda::MempoolId_t{0, 0};
    graph->previous_stream = c10::cuda::getCurrentCUDAStream();
    c10::cuda::setCurrentCUDAStream(c10::cuda::getStreamFromPool());
    try {
      graph->graph.capture_begin(pool);
      llmprof::capture_record_begin();
    } catch (...) {
      c10::cuda::setCurrentCUDAStream(*graph->previous_stream);
      graph->previous_stream.reset();
      throw;
    }
  });
}

int llmprof_cuda_graph_capture_end(llmprof_cuda_graph* graph) {
  return guarded("cuda_graph_capture_end", [&] {
    TORCH_CHECK(graph != nullptr, "graph is NULL");
    TORCH_CHECK(graph->previous_stream.has_value(), "no capture in progress");
    const auto previous = *graph->previous_stream;
    graph->previous_stream.reset();
    // Before capture_end: without keep_graph the graph is freed once instantiated.
    graph->record = llmprof::capture_record_finish();
    try {
      graph->graph.capture_end();
      // A kept graph is not instantiated by capture_end.
      if (graph->keep_graph) graph->graph.instantiate();
    } catch (...) {
      c10::cuda::setCurrentCUDAStream(previous);
      throw;
    }
    c10::cuda::setCurrentCUDAStream(previous);
    // Upload the executable graph now rather than at its first launch. Without it, batch-1
    // decode-step graphs replayed with 6 vision graphs instantiated ran their 481 kernels with
    // ~0.46 us more idle time each (1.81 vs 1.65 ms per step on an H100, same kernel time);
    // with it, they match the decode-graphs-only timing (reports/performance-history.md, "Vision
    // CUDA graphs").
    C10_CUDA_CHECK(cudaGraphUpload(graph->graph.raw_cuda_graph_exec(), previous.stream()));
  });
}

int llmprof_cuda_graph_replay(llmprof_cuda_graph* graph) {
  return guarded("cuda_graph_replay", [&] {
    TORCH_CHECK(graph != nullptr, "graph is NULL");
    TORCH_CHECK(!graph->previous_stream.has_value(), "replay during capture");
    // A cpu op around the launch while Kineto records, so that the replayed kernels (which
    // carry only the launch's correlation) can be traced back to this graph's capture record.
    at::RecordFunction replay_op(at::RecordScope::FUNCTION);
    if (replay_op.isActive()) {
      replay_op.before("llmprof::graph_replay#" + std::to_string(graph->serial));
    }
    graph->graph.replay();
  });
}

uint64_t llmprof_cuda_graph_serial(const llmprof_cuda_graph* graph) {
  return graph == nullptr ? 0 : graph->serial;
}

size_t llmprof_cuda_graph_record_len(const llmprof_cuda_graph* graph) {
  return graph == nullptr ? 0 : graph->record.nodes.size();
}

int llmprof_cuda_graph_record_node(const llmprof_cuda_graph* graph, size_t index,
                                   llmprof_graph_node* out) {
  return guarded("cuda_graph_record_node", [&] {
    TORCH_CHECK(graph != nullptr && out != nullptr, "NULL argument");
    TORCH_CHECK(index < graph->record.nodes.size(), "node ", index, " of ",
                graph->record.nodes.size());
    const auto& n = graph->record.nodes[index];
    *out = llmprof_graph_node{n.kind,         n.mark,           n.name.data(),
                              n.name.size(),  n.mangled.data(), n.mangled.size(),
                              n.deps.data(),  n.deps.size()};
  });
}

size_t llmprof_cuda_graph_record_error(const llmprof_cuda_graph* graph, char* buf, size_t len) {
  if (graph == nullptr) return 0;
  const std::string& e = graph->record.error;
  if (buf != nullptr && len > 0) {
    const size_t n = std::min(len - 1, e.size());
    std::copy(e.data(), e.data() + n, buf);
    buf[n] = '\0';
  }
  return e.size();
}

void llmprof_cuda_graph_destroy(llmprof_cuda_graph* graph) {
  if (graph == nullptr) return;
  try {
    if (graph->previous_stream.has_value()) {
      c10::cuda::setCurrentCUDAStream(*graph->previous_stream);
    }
    delete graph;
  } catch (...) {
  }
}

int llmprof_capture_upload(const void* dst, const void* src, void** node, void** dst_data,
                           const void** src_data, size_t* bytes) {
  return guarded("capture_upload", [&] {
    TORCH_CHECK(dst != nullptr && src != nullptr && node != nullptr && dst_data != nullptr &&
                    src_data != nullptr && bytes != nullptr,
                "NULL argument");
    *node = nullptr;
    const auto& d = *static_cast<const at::Tensor*>(dst);
    const auto& s = *static_cast<const at::Tensor*>(src);
    TORCH_CHECK(s.device().is_cpu() && d.device().is_cuda(), "an upload copies host to GPU");
    TORCH_CHECK(d.sizes() == s.sizes() && d.scalar_type() == s.scalar_type(),
                "an upload's source and destination need the same shape and dtype");
    for (int64_t i = 0; i < s.dim(); ++i) {
      TORCH_CHECK(s.size(i) == 1 || d.stride(i) == s.stride(i),
                  "an upload's source and destination need the same memory layout");
    }
    TORCH_CHECK(s.is_non_overlapping_and_dense() && s.nbytes() > 0,
                "an upload's source must be dense and non-empty");
    TORCH_CHECK(s.is_pinned(),
                "the upload's source is not page-locked host memory (only such copies can be "
                "captured in a CUDA graph)");
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    cudaStreamCaptureStatus status{};
    C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    TORCH_CHECK(status == cudaStreamCaptureStatusActive, "the current stream is not capturing");
    C10_CUDA_CHECK(
        cudaMemcpyAsync(d.data_ptr(), s.data_ptr(), s.nbytes(), cudaMemcpyHostToDevice, stream));
    // The stream's capture now depends on exactly the node just added: the copy.
    const cudaGraphNode_t* deps = nullptr;
    size_t count = 0;
    C10_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, nullptr,
                                            &count));
    TORCH_CHECK(count == 1 && deps != nullptr, "the captured copy is not the stream's last node");
    cudaGraphNodeType type{};
    C10_CUDA_CHECK(cudaGraphNodeGetType(deps[0], &type));
    TORCH_CHECK(type == cudaGraphNodeTypeMemcpy, "the captured copy is not a memcpy node");
    *node = deps[0];
    *dst_data = d.data_ptr();
    *src_data = s.data_ptr();
    *bytes = s.nbytes();
  });
}

int llmprof_cuda_graph_set_upload(llmprof_cuda_graph* graph, void* node, void* dst_data,
                                  size_t bytes, const void* src, size_t offset) {
  return guarded("cuda_graph_set_upload", [&] {
    TORCH_CHECK(graph != nullptr && node != nullptr && dst_data != nullptr && src != nullptr,
                "NULL argument");
    TORCH_CHECK(!graph->previous_stream.has_value(), "set_upload during capture");
    TORCH_CHECK(graph->keep_graph, "set_upload on a graph created without keep_graph");
    const auto& s = *static_cast<const at::Tensor*>(src);
    TORCH_CHECK(s.device().is_cpu() && s.is_non_overlapping_and_dense(),
                "an upload's new source must be a dense host tensor");
    TORCH_CHECK(offset <= s.nbytes() && bytes <= s.nbytes() - offset, "an upload of ", bytes,
                " bytes from byte ", offset, " of a ", s.nbytes(), "-byte host tensor");
    const void* from = static_cast<const char*>(s.data_ptr()) + offset;
    TORCH_CHECK(s.is_pinned(), "the upload's new source is not page-locked host memory");
    C10_CUDA_CHECK(cudaGraphExecMemcpyNodeSetParams1D(graph->graph.raw_cuda_graph_exec(),
                                                      static_cast<cudaGraphNode_t>(node),
                                                      dst_data, from, bytes,
                                                      cudaMemcpyHostToDevice));
  });
}

int llmprof_host_tensor_used(const void* tensor) {
  return guarded("host_tensor_used", [&] {
    TORCH_CHECK(tensor != nullptr, "NULL argument");
    const auto& t = *static_cast<const at::Tensor*>(tensor);
    TORCH_CHECK(t.device().is_cpu(), "not a host tensor");
    const auto& data = t.storage().data_ptr();
    at::getHostAllocator(at::kCUDA)->record_event(data.get(), data.get_context(),
                                                  c10::cuda::getCurrentCUDAStream().unwrap());
  });
}

}  // extern "C"
