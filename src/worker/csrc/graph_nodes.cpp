// Capture records (graph_nodes.h). Nodes are created as the host launches work, so the host's
// order of marks and launches partitions them: at each mark, every node not seen before belongs
// to the mark in effect until then. The graph's node list order is undocumented, so "not seen
// before" is a set difference, not a position. Kernel names come from the driver
// (cuGraphKernelNodeGetParams → CUfunction/CUkernel → cuFuncGetName/cuKernelGetName, reached
// through cudaGetDriverEntryPointByVersion: no link against libcuda) and are demangled as CUPTI's
// are, so that a replayed kernel in a Kineto trace can be checked against its node by name.
#include "graph_nodes.h"

#include "shim.h"
#include "shim_guard.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <unordered_map>

namespace {

struct CaptureState {
  bool active = false;
  cudaGraph_t graph = nullptr;
  uint32_t current_mark = 0;
  std::unordered_map<cudaGraphNode_t, uint32_t> node_mark;
  std::string error;
};

thread_local CaptureState t_capture;

using GetKernelParams = CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2*);
using FuncGetName = CUresult (*)(const char**, CUfunction);
using KernelGetName = CUresult (*)(const char**, CUkernel);

template <typename T>
T driver_entry(const char* symbol, unsigned version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<T>(fn);
}

struct DriverNames {
  GetKernelParams get_params = driver_entry<GetKernelParams>("cuGraphKernelNodeGetParams", 12000);
  FuncGetName func_name = driver_entry<FuncGetName>("cuFuncGetName", 12030);
  KernelGetName kernel_name = driver_entry<KernelGetName>("cuKernelGetName", 12030);
};

std::string demangled(const char* mangled) {
  if (mangled == nullptr) return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(mangled);
}

// The kernel's name as the driver gives it (mangled), empty when unknown.
std::string kernel_name_of(cudaGraphNode_t node) {
  static const DriverNames driver;
  if (driver.get_params == nullptr) return {};
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  if (driver.get_params(reinterpret_cast<CUgraphNode>(node), &params) != CUDA_SUCCESS) return {};
  const char* name = nullptr;
  if (params.func != nullptr && driver.func_name != nullptr) {
    if (driver.func_name(&name, params.func) != CUDA_SUCCESS) name = nullptr;
  } else if (params.kern != nullptr && driver.kernel_name != nullptr) {
    if (driver.kernel_name(&name, params.kern) != CUDA_SUCCESS) name = nullptr;
  }
  return name == nullptr ? std::string() : std::string(name);
}

std::vector<cudaGraphNode_t> graph_nodes_of(cudaGraph_t graph) {
  size_t count = 0;
  C10_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) C10_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  nodes.resize(count);
  return nodes;
}

// Charges every node not seen yet to the mark in effect.
void assign_new_nodes(CaptureState& s) {
  for (cudaGraphNode_t n : graph_nodes_of(s.graph)) {
    s.node_mark.emplace(n, s.current_mark);
  }
}

}  // namespace

namespace llmprof {

void capture_record_begin() {
  t_capture = CaptureState{};
  cudaStreamCaptureStatus status{};
  cudaGraph_t graph = nullptr;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  if (cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr) !=
          cudaSuccess ||
      status != cudaStreamCaptureStatusActive || graph == nullptr) {
    (void)cudaGetLastError();
    t_capture.error = "the capturing stream did not give its graph";
    return;
  }
  t_capture.active = true;
  t_capture.graph = graph;
}

CaptureRecord capture_record_finish() {
  CaptureRecord record;
  CaptureState s = std::move(t_capture);
  t_capture = CaptureState{};
  record.error = s.error;
  if (!s.active || !s.error.empty()) {
    if (record.error.empty()) record.error = "no capture was being recorded";
    return record;
  }
  try {
    assign_new_nodes(s);
    const std::vector<cudaGraphNode_t> nodes = graph_nodes_of(s.graph);
    std::unordered_map<cudaGraphNode_t, uint32_t> index;
    for (size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i], static_cast<uint32_t>(i));
    record.nodes.reserve(nodes.size());
    for (cudaGraphNode_t n : nodes) {
      NodeRecord r;
      cudaGraphNodeType type{};
      C10_CUDA_CHECK(cudaGraphNodeGetType(n, &type));
      r.kind = type == cudaGraphNodeTypeKernel   ? 1
               : type == cudaGraphNodeTypeMemcpy ? 2
               : type == cudaGraphNodeTypeMemset ? 3
                                                 : 0;
      if (r.kind == 1) {
        r.mangled = kernel_name_of(n);
        r.name = r.mangled.empty() ? std::string() : demangled(r.mangled.c_str());
      }
      const auto m = s.node_mark.find(n);
      r.mark = m == s.node_mark.end() ? 0 : m->second;
      size_t n_deps = 0;
      C10_CUDA_CHECK(cudaGraphNodeGetDependencies(n, nullptr, nullptr, &n_deps));
      std::vector<cudaGraphNode_t> deps(n_deps);
      // With the edges' data: a NULL one is refused (cudaErrorLossyQuery) when an edge carries
      // data, as the programmatic (overlapping) dependencies of PDL kernels do. Either kind of
      // edge orders the two nodes' starts, which is all the matcher needs.
      std::vector<cudaGraphEdgeData> edges(n_deps);
      if (n_deps > 0) {
        C10_CUDA_CHECK(cudaGraphNodeGetDependencies(n, deps.data(), edges.data(), &n_deps));
      }
      for (size_t d = 0; d < n_deps; ++d) {
        const auto at = index.find(deps[d]);
        if (at != index.end()) r.deps.push_back(at->second);
      }
      record.nodes.push_back(std::move(r));
    }
  } catch (const std::exception& e) {
    record.nodes.clear();
    record.error = e.what();
  }
  return record;
}

}  // namespace llmprof

extern "C" {

int llmprof_capture_mark(uint32_t mark) {
  return llmprof::guarded("capture_mark", [&] {
    CaptureState& s = t_capture;
    if (!s.active) return;
    try {
      assign_new_nodes(s);
    } catch (const std::exception& e) {
      s.active = false;
      s.error = std::string("reading the graph under capture: ") + e.what();
      throw;
    }
    s.current_mark = mark;
  });
}

}  // extern "C"
