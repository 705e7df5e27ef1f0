// The launch policy of pdl.cuh: whether llmprof's kernels are launched with programmatic
// dependent launch (`runtime.optim.programmatic_launch`), for the process, applied on devices of
// compute capability 9.0 or newer only.
#include "device.cuh"
#include "launch.h"
#include "pdl.cuh"

#include <atomic>

namespace {
std::atomic<int> requested{0};
}  // namespace

extern "C" void llmprof_k_set_programmatic_launch(int on) { requested.store(on ? 1 : 0); }

extern "C" int llmprof_k_programmatic_launch(void) {
  if (requested.load(std::memory_order_relaxed) == 0) return 0;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  return llmprof_k::compute_major(device) >= 9 ? 1 : 0;
}
