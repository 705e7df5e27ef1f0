// Facts about the current CUDA device that launchers size their grids by (host-side, cached).
#ifndef LLMPROF_KERNELS_DEVICE_CUH
#define LLMPROF_KERNELS_DEVICE_CUH

#include <cuda_runtime.h>

namespace llmprof_k {

// The current device's multiprocessor count, read once per process (132 where it cannot be
// read: an H100 SXM's, only ever a grid-sizing guess).
inline int sm_count() {
  static const int n = [] {
    int dev = 0, count = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        count < 1) {
      return 132;
    }
    return count;
  }();
  return n;
}

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_DEVICE_CUH
