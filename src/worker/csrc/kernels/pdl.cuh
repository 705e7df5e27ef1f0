// Programmatic dependent launch (PDL, compute capability 9.0+) for llmprof's kernels: launched
// with it, a kernel may start while the kernel before it in the stream is still running, and
// waits for that kernel's results (all of them complete and visible) at
// `wait_for_previous_grid()`. Every kernel launched through `llmprof_k::launch` therefore calls
// `wait_for_previous_grid()` before it reads anything an earlier kernel wrote and before it
// writes anything (the earlier kernel may still read it); only reads of what no kernel of the
// step writes (a projection's weight) may come first. After its wait it calls
// `let_next_grid_start()`, so the kernel after it can be scheduled onto free SMs and start its
// own preamble. Launched without PDL (the policy off, a GPU before Hopper) both are no-ops and
// the stream orders kernels as always. The policy is `runtime.optim.programmatic_launch`
// (ffi/kernels.rs sets it when a model is built).
#ifndef LLMPROF_KERNELS_PDL_CUH
#define LLMPROF_KERNELS_PDL_CUH

#include <cuda_runtime.h>

#include <utility>

extern "C" int llmprof_k_programmatic_launch(void);

namespace llmprof_k {

__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void let_next_grid_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Both, in that order: what a kernel with nothing to do before its inputs are ready calls first.
__device__ __forceinline__ void begin_after_previous_grid() {
  wait_for_previous_grid();
  let_next_grid_start();
}

// Launches `kernel` on `stream`, with programmatic stream serialization where the policy allows
// it (llmprof_k_programmatic_launch). `kernel` must call `begin_after_previous_grid()` (or
// `wait_for_previous_grid()`) before it reads what an earlier kernel wrote or writes anything:
// launched this way, nothing else orders it after the kernel before it. Returns the launch's
// error, cleared from the runtime's last error so the next launch does not report it again.
template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                   cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = llmprof_k_programmatic_launch() ? 1 : 0;
  const cudaError_t e =
      cudaLaunchKernelEx(&config, kernel, static_cast<Params>(std::forward<Args>(args))...);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return e;
  }
  return cudaGetLastError();
}

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_PDL_CUH
