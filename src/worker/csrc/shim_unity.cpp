// The shim's one translation unit: every source below parses libtorch's headers, which is most
// of their compile time, so the build compiles them together (about 20 s of CPU at -O3 instead
// of about 80 s as seven units; docs/first-contact.md). A name defined twice at file scope
// (anonymous namespaces included) is a compile error here: give helpers distinct names.
#include "shim.cpp"
#include "kernels.cpp"
#include "kernels_vision.cpp"
#include "kernels_gemm.cpp"
#include "kernels_gemv.cpp"
#include "streams.cpp"
#include "host_memory.cpp"
#include "graph_nodes.cpp"
#include "cuda_graph.cpp"
#include "nvtx.cpp"
#include "nccl.cpp"
