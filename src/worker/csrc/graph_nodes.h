// The capture record of a CUDA graph (graph_nodes.cpp): which mark (a module path interned by the
// worker, engine/capture_marks.rs) was in effect when each node was added, and each node's kind,
// kernel name and dependencies, taken from the graph under construction before capture ends.
#ifndef LLMPROF_GRAPH_NODES_H
#define LLMPROF_GRAPH_NODES_H

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace llmprof {

struct NodeRecord {
  int kind = 0;  // 0 other, 1 kernel, 2 memcpy, 3 memset
  uint32_t mark = 0;
  std::string name;            // demangled kernel name; empty for other kinds or when unknown
  std::string mangled;         // the name as the driver gives it (CUPTI may report this form)
  std::vector<uint32_t> deps;  // indices of the nodes this one depends on
};

struct CaptureRecord {
  std::vector<NodeRecord> nodes;
  std::string error;  // why the record is incomplete (then nodes is empty)
};

// Starts recording the capture the current stream has just begun (this thread).
void capture_record_begin();
// Ends the recording (before the capture ends: the graph is still alive) and returns it.
CaptureRecord capture_record_finish();

}  // namespace llmprof

#endif
