// What launching llmprof's CUTLASS kernels takes (linear_gelu.cu, and sam_global_attention.cu and
// sam_window_fmha.cu on the Hopper FMHA of example 88): the current device, a kernel's
// shared-memory limit raised once per device, the SM count, and CUTLASS's setup and launch with
// its failures mapped to llmprof's return codes.
#ifndef LLMPROF_SM90A_CUTLASS_LAUNCH_H
#define LLMPROF_SM90A_CUTLASS_LAUNCH_H

#include <cuda_runtime.h>

#include "../device.cuh"
#include "cutlass/cutlass.h"
#include "cutlass/device_kernel.h"

namespace llmprof_cutlass {

// The current device in `device`, 0..63 (the per-device tables below); a cudaError_t otherwise.
inline int current_device(int& device) {
  const cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return (int)e;
  return device >= 0 && device < 64 ? 0 : (int)cudaErrorInvalidDevice;
}

// Universal::initialize raises the kernel's shared-memory limit once per process; the limit is
// per device, so it is raised here for each device the kernel runs on. 0 or a cudaError_t.
template <class Op>
int raise_smem_limit(int device) {
  static bool done[64] = {};
  if (done[device]) return 0;
  const cudaError_t e =
      cudaFuncSetAttribute(cutlass::device_kernel<typename Op::Kernel>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)Op::Kernel::SharedStorageSize);
  if (e != cudaSuccess) return (int)e;
  done[device] = true;
  return 0;
}

// The device's SM count, or 0 when the driver does not say (../device.cuh).
using llmprof_k::sm_count;

// CUTLASS's setup and launch of `args` on `stream` (`workspace` as large as the operation asks).
// Returns 0, −(CUTLASS status) (its launch reads and clears the CUDA error itself, so a failed
// launch is −kErrorInternal), or a CUDA error left pending as the cudaError_t; a failed setup
// leaves no CUDA error pending for the next launch to report.
template <class Op>
int run(typename Op::Arguments const& args, void* workspace, cudaStream_t stream) {
  Op op;
  cutlass::Status status = op.can_implement(args);
  if (status == cutlass::Status::kSuccess) status = op.initialize(args, workspace, stream);
  if (status != cutlass::Status::kSuccess) {
    const cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? (int)e : -(int)status;
  }
  status = op.run(stream);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return (int)e;
  return status == cutlass::Status::kSuccess ? 0 : -(int)status;
}

}  // namespace llmprof_cutlass

#endif  // LLMPROF_SM90A_CUTLASS_LAUNCH_H
