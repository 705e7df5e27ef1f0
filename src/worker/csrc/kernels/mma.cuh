// One m16n8k16 tensor-core MMA (fp32 accumulate) on bf16 or fp16 fragments held in registers,
// and the packing of two floats into one fragment register. Fragment layouts (PTX ISA, "Matrix
// fragments for mma.m16n8k16"), lane l, r = l / 4, c = (l % 4) · 2:
//   A 16×16 (row-major): a0 = A[r][c, c+1], a1 = A[r+8][c, c+1], a2 = A[r][c+8, c+9],
//                        a3 = A[r+8][c+8, c+9]
//   B 16×8 (k × n):      b0 = B[c, c+1][r], b1 = B[c+8, c+9][r]
//   D 16×8 fp32:         d0, d1 = D[r][c, c+1], d2, d3 = D[r+8][c, c+1]
#ifndef LLMPROF_KERNELS_MMA_CUH
#define LLMPROF_KERNELS_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace llmprof_k {

template <typename T> struct Mma;
template <> struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
};
template <> struct Mma<__half> {
  static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
};

}  // namespace llmprof_k

#endif  // LLMPROF_KERNELS_MMA_CUH
