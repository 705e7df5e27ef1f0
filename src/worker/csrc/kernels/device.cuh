// Facts about CUDA devices that launchers size their grids by (host-side, cached per device).
#ifndef LLMPROF_KERNELS_DEVICE_CUH
#define LLMPROF_KERNELS_DEVICE_CUH

#include <cuda_runtime.h>

namespace llmprof_k {

// `device`'s multiprocessor count (asked once per device for devices 0..63), or 0 when the
// driver does not say.
inline int sm_count(int device) {
  static int count[64] = {};
  const bool cached = device >= 0 && device < 64;
  if (cached && count[device] != 0) return count[device];
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) n = 0;
  if (cached) count[device] = n;
  return n;
}

// `device`'s compute capability major version (asked once per device for devices 0..63), or 0
// when the driver does not say.
inline int compute_major(int device) {
  static int major[64] = {};
  const bool cached = device >= 0 && device < 64;
  if (cached && major[device] != 0) return major[device];
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) v = 0;
  if (cached) major[device] = v;
  return v;
}

// The current device's multiprocessor count; 132 (an H100 SXM's) where it cannot be read: only
// ever a grid-sizing guess.
inline int current_sm_count() {
  int device = 0;
  const int n = cudaGetDevice(&device) == cudaSuccess ? sm_count(device) : 0;
  return n > 0 ? n : 132;
}

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_DEVICE_CUH
