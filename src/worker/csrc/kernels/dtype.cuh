// Conversions between the kernels' element types (float, bfloat16, half) and the float they
// compute in. Rounding back to the element type goes through these, so a kernel that replays a
// libtorch op sequence rounds where libtorch rounds.
#ifndef LLMPROF_KERNELS_DTYPE_CUH
#define LLMPROF_KERNELS_DTYPE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace llmprof_k {

// `V` elements of T moved as one access (16 bytes when V = 16 / sizeof(T)).
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T e[V];
};

template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half(x); }

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }

// Whether `p` may be read or written as 16-byte vectors (host launchers and device code alike).
__host__ __device__ __forceinline__ bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// `x` rounded to T and back: the value libtorch stores after an op in T.
template <typename T> __device__ __forceinline__ float round_to(float x) {
  return to_f(from_f<T>(x));
}

}  // namespace llmprof_k

// Calls `launch<T>(args...)` for the element type `dtype` (LLMPROF_K_F32/BF16/F16); an unknown
// code is cudaErrorInvalidValue.
#define LLMPROF_K_DISPATCH(dtype, launch, ...)                                 \
  switch (dtype) {                                                             \
    case LLMPROF_K_F32: return launch<float>(__VA_ARGS__);                     \
    case LLMPROF_K_BF16: return launch<__nv_bfloat16>(__VA_ARGS__);            \
    case LLMPROF_K_F16: return launch<__half>(__VA_ARGS__);                    \
    default: return (int)cudaErrorInvalidValue;                                \
  }

#endif  // LLMPROF_KERNELS_DTYPE_CUH
