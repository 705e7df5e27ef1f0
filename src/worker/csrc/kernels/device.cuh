// Facts about CUDA devices that launchers size their grids by (host-side, cached per device).
#ifndef LLMPROF_KERNELS_DEVICE_CUH
#define LLMPROF_KERNELS_DEVICE_CUH

#include <cuda_runtime.h>

#include <atomic>

namespace llmprof_k {

// `kAttr` of `device` (asked once per device for devices 0..63), or 0 when the driver does not
// say.
template <cudaDeviceAttr kAttr>
inline int device_attribute(int device) {
  static std::atomic<int> value[64] = {};
  const bool cached = device >= 0 && device < 64;
  if (cached) {
    const int v = value[device].load(std::memory_order_relaxed);
    if (v != 0) return v;
  }
  int v = 0;
  if (cudaDeviceGetAttribute(&v, kAttr, device) != cudaSuccess) v = 0;
  if (cached) value[device].store(v, std::memory_order_relaxed);
  return v;
}

// `device`'s multiprocessor count, or 0 when the driver does not say.
inline int sm_count(int device) {
  return device_attribute<cudaDevAttrMultiProcessorCount>(device);
}

// `device`'s compute capability major version, or 0 when the driver does not say.
inline int compute_major(int device) {
  return device_attribute<cudaDevAttrComputeCapabilityMajor>(device);
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
