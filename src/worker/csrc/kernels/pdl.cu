// The launch policy of pdl.cuh: whether llmprof's kernels are launched with programmatic
// dependent launch (`runtime.optim.programmatic_launch`), for the process. It applies only where
// the code that runs has the waits: a device of compute capability 9.0 or newer running code
// compiled for 9.0 or newer. A build for older architectures only (LLMPROF_CUDA_ARCHS=80) runs on
// an H100 from compute_80 PTX, whose kernels have no griddepcontrol (it compiles away below
// sm_90), and launched early they would read their inputs before they are written.
#include "device.cuh"
#include "launch.h"
#include "pdl.cuh"

#include <atomic>

namespace {

std::atomic<int> requested{0};

// The kernels' architecture on this device, as the loaded code says: a kernel of this file.
__global__ void probe() {}

// 1 where `device` runs code of compute capability 9.0 or newer, 0 otherwise (asked once per
// device for devices 0..63).
int runs_sm90_code(int device) {
  static std::atomic<int> answer[64] = {};  // 0 unknown, 1 yes, 2 no
  const bool cached = device >= 0 && device < 64;
  if (cached) {
    const int a = answer[device].load(std::memory_order_relaxed);
    if (a != 0) return a == 1 ? 1 : 0;
  }
  cudaFuncAttributes attributes{};
  int yes = 0;
  if (llmprof_k::compute_major(device) >= 9 &&
      cudaFuncGetAttributes(&attributes, probe) == cudaSuccess) {
    yes = attributes.ptxVersion >= 90 ? 1 : 0;
  } else {
    (void)cudaGetLastError();
  }
  if (cached) answer[device].store(yes ? 1 : 2, std::memory_order_relaxed);
  return yes;
}

}  // namespace

extern "C" void llmprof_k_set_programmatic_launch(int on) { requested.store(on ? 1 : 0); }

extern "C" int llmprof_k_programmatic_launch(void) {
  if (requested.load(std::memory_order_relaxed) == 0) return 0;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  return runs_sm90_code(device);
}
