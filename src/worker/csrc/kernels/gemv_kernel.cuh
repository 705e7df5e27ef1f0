// The GEMV kernel of gemv.cu (its calls, load plans and entry points are there): y[m, n] =
// Σ_k x[m, k]·w[n, k] (+ bias[n]) over a few rows, each warp walking its outputs' weight rows in
// 16-byte loads. Included by gemv.cu alone (and the microbenchmarks in reports/gpu-runs/).
#ifndef LLMPROF_KERNELS_GEMV_KERNEL_CUH
#define LLMPROF_KERNELS_GEMV_KERNEL_CUH

#include "add_rms_norm_row.cuh"
#include "dtype.cuh"
#include "pdl.cuh"

#include <cuda_runtime.h>

namespace {

using llmprof_k::from_f;
using llmprof_k::to_f;

// The 16-byte loads per row a lane keeps in flight: kDefaultUnroll in groups, kWideUnroll for a
// row read whole (gemv.cu's load_plan says which call takes which).
constexpr int kDefaultUnroll = 4, kWideUnroll = 8;

// The residual add and RMSNorm a one-row call folds in (kNormVecs > 0): its x is the residual
// stream, its input add_rms_norm_row(x, delta, weight, eps) (add_rms_norm_row.cuh), which every
// block computes into shared memory after its first weight loads went out; block 0 writes the
// sum. At batch 1 it replaces the add + RMSNorm kernel before q/k/v and gate/up: ≈ 1.3 µs more
// in the GEMV against ≈ 3.1 µs for the norm's own kernel (H200, reports/performance-history.md,
// round 3 session 32).
template <typename T>
struct FoldedNorm {
  const T* delta;
  const T* weight;
  T* sum;
  float eps;
};

// kM: the rows the template handles (calls with fewer rows skip the missing ones).
// kGrouped: the rows of a MoE step's token slots sorted by expert, one slot per blockIdx.y (kM
// 1): slot s takes x[s], writes y[s], and its expert's weight w[e] [n, k], e the group of
// `group_ends` [experts] (inclusive cumulative slot counts, from the routing kernel) holding s.
// kNormVecs: 0, or the 16-byte vectors a thread holds of the folded norm's row (kM 1, 8 warps:
// the add + RMSNorm kernel's thread mapping; k × sizeof(T) bytes of dynamic shared memory).
// kUnroll: the 16-byte loads per row a lane keeps in flight (kDefaultUnroll or kWideUnroll).
// kPartialGroups: a row's first and last groups of loads may be partial (loads past the row's
// end not made), so every lane's first group goes out before the wait and its last loads go out
// together; without it a lane whose first group is not whole waits before any load, and the
// row's end is read one load a step. Which is faster depends on the shape (`load_plan`).
// kSwiGlu: the weight is a fused gate/up projection [gate; up] of n = 2f rows, and the call
// writes silu(gate row j)·(up row j) [m, f] instead of the projection: each warp reads the gate
// and up rows of kRowsPerWarp / 2 outputs (the same rows a block as without it), and rounds as
// the GEMV and then swiglu.cu's kernel round (each projection to T, silu to T, the product to
// T), so the values are the two kernels' bit for bit, one launch fewer.
template <typename T, int kM, bool kGrouped, int kWarps, int kRowsPerWarp, int kNormVecs = 0,
          int kUnroll = kDefaultUnroll, bool kPartialGroups = false, bool kSwiGlu = false>
__global__ void __launch_bounds__(kWarps * 32)
    gemv(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
         T* __restrict__ y, int m, int64_t n, int64_t k, const int32_t* __restrict__ group_ends,
         int experts, FoldedNorm<T> norm) {
  static_assert(kNormVecs == 0 || (kM == 1 && !kGrouped && kWarps * 32 == 256),
                "the folded norm is a one-row call in blocks of the norm kernel's 256 threads");
  constexpr int kV = 16 / (int)sizeof(T);  // elements per 16-byte load
  constexpr int kStep = 32 * kV;            // elements a warp covers per load
  static_assert(!kSwiGlu || kRowsPerWarp % 2 == 0, "a warp reads whole gate/up pairs");
  constexpr int kOutsPerWarp = kSwiGlu ? kRowsPerWarp / 2 : kRowsPerWarp;
  const int64_t outs = kSwiGlu ? n / 2 : n;  // outputs a row of y holds
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t n0 = ((int64_t)blockIdx.x * kWarps + warp) * kOutsPerWarp;  // first output
  const bool active = n0 < outs;  // a warp past the outputs still helps with a folded norm
  if (kNormVecs == 0 && !active) return;  // before the wait: this warp reads and writes nothing
  if constexpr (kGrouped) {
    // Which weight to read comes from the routing kernel before this one: wait first.
    llmprof_k::begin_after_previous_grid();
    const int slot = blockIdx.y;
    // The first group whose end is past the slot: the warp reads 32 ends at a time and votes
    // (group_ends rises with the expert, so the votes past the slot are a suffix): one round
    // trip per 32 experts where a binary search made ≈ 7 dependent reads of the routing kernel's
    // output (round 3 session 36). The loop is not unrolled: reading every chunk at once took
    // registers from the SwiGLU form (48 → 56, one resident block an SM fewer).
    int expert = experts - 1;  // past every end (not a slot the routing makes): the last expert
#pragma unroll 1
    for (int base = 0; base < experts; base += 32) {
      const int e = base + lane;
      const unsigned past = __ballot_sync(0xffffffffu, e < experts && group_ends[e] > slot);
      if (past != 0u) {
        expert = base + __ffs(past) - 1;
        break;
      }
    }
    w += (int64_t)expert * n * k;
    x += (int64_t)slot * k;
    y += (int64_t)slot * outs;
  }
  // Weight row of the warp's row r: output n0 + r, or with kSwiGlu gate (r even) and up (r odd)
  // of output n0 + r / 2.
  const T* rows[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t o = min(n0 + (kSwiGlu ? r / 2 : r), outs - 1);
    rows[r] = w + (kSwiGlu ? (r % 2) * outs + o : o) * k;
  }
  float acc[kRowsPerWarp][kM];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int i = 0; i < kM; ++i) acc[r][i] = 0.f;

  auto fma_block = [&](const uint4 (&wv)[kRowsPerWarp], int64_t c) {
#pragma unroll
    for (int i = 0; i < kM; ++i) {
      if (i >= m) break;
      const uint4 xv = *reinterpret_cast<const uint4*>(x + (int64_t)i * k + c);
      const T* xe = reinterpret_cast<const T*>(&xv);
      float xf[kV];
#pragma unroll
      for (int e = 0; e < kV; ++e) xf[e] = to_f(xe[e]);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const T* we = reinterpret_cast<const T*>(&wv[r]);
#pragma unroll
        for (int e = 0; e < kV; ++e) acc[r][i] = fmaf(xf[e], to_f(we[e]), acc[r][i]);
      }
    }
  };

  auto load_group = [&](uint4 (&wv)[kUnroll][kRowsPerWarp], int64_t c) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
        wv[u][r] = __ldcs(reinterpret_cast<const uint4*>(rows[r] + c + u * kStep));
  };
  // A group that may reach past the row's end: the loads past it are not made (zeros stand in).
  auto load_partial_group = [&](uint4 (&wv)[kUnroll][kRowsPerWarp], int64_t c) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
        wv[u][r] = c + u * kStep < k
                       ? __ldcs(reinterpret_cast<const uint4*>(rows[r] + c + u * kStep))
                       : make_uint4(0, 0, 0, 0);
  };
  auto fma_partial_group = [&](const uint4 (&wv)[kUnroll][kRowsPerWarp], int64_t c) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (c + u * kStep >= k) break;
      fma_block(wv[u], c + u * kStep);
    }
  };

  int64_t c = (int64_t)lane * kV;
  // The first group of weight loads goes out before the wait for the kernel before this one
  // (programmatic dependent launch, pdl.cuh): no kernel of the step writes the weight, so its
  // bytes stream in while that kernel finishes; x and y only after.
  uint4 first[kUnroll][kRowsPerWarp];
  const bool whole_first = active && c + (kUnroll - 1) * kStep < k;
  if constexpr (kPartialGroups) {
    if (active) load_partial_group(first, c);
  } else if (whole_first) {
    load_group(first, c);
  }
  if constexpr (!kGrouped) llmprof_k::begin_after_previous_grid();
  if constexpr (kNormVecs > 0) {
    extern __shared__ uint4 normed_smem[];
    __shared__ float partial[kWarps];
    T* normed = reinterpret_cast<T*>(normed_smem);
    llmprof_k::add_rms_norm_row<T, kNormVecs, kWarps * 32>(
        x, norm.delta, norm.weight, blockIdx.x == 0 ? norm.sum : nullptr, normed, k, norm.eps,
        partial);
    __syncthreads();
    x = normed;
    if (!active) return;
  }
  if constexpr (kPartialGroups) {
    fma_partial_group(first, c);
    c += kUnroll * kStep;
  } else if (whole_first) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) fma_block(first[u], c + u * kStep);
    c += kUnroll * kStep;
  }
  // Whole groups of kUnroll steps: every load of the group issued before the first use.
  for (; c + (kUnroll - 1) * kStep < k; c += kUnroll * kStep) {
    uint4 wv[kUnroll][kRowsPerWarp];
    load_group(wv, c);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) fma_block(wv[u], c + u * kStep);
  }
  if constexpr (kPartialGroups) {
    if (c < k) {
      uint4 wv[kUnroll][kRowsPerWarp];
      load_partial_group(wv, c);
      fma_partial_group(wv, c);
    }
  } else {
    for (; c < k; c += kStep) {
      uint4 wv[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
        wv[r] = __ldcs(reinterpret_cast<const uint4*>(rows[r] + c));
      fma_block(wv, c);
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int i = 0; i < kM; ++i)
#pragma unroll
      for (int o = 16; o > 0; o /= 2) acc[r][i] += __shfl_xor_sync(0xffffffffu, acc[r][i], o);
  if constexpr (kSwiGlu) {  // no bias: the entry points refuse one with SwiGLU
    if (lane == 0) {
#pragma unroll
      for (int p = 0; p < kOutsPerWarp; ++p) {
        const int64_t col = n0 + p;
        if (col >= outs) break;
#pragma unroll
        for (int i = 0; i < kM; ++i) {
          if (i >= m) break;
          const float g = llmprof_k::round_to<T>(acc[2 * p][i]);
          const float u = llmprof_k::round_to<T>(acc[2 * p + 1][i]);
          const float silu = llmprof_k::round_to<T>(__fdiv_rn(g, __fadd_rn(1.f, expf(-g))));
          y[(int64_t)i * outs + col] = from_f<T>(__fmul_rn(silu, u));
        }
      }
    }
  } else if (lane == 0) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t col = n0 + r;
      if (col >= n) break;
      const float b = bias ? to_f(bias[col]) : 0.f;
#pragma unroll
      for (int i = 0; i < kM; ++i)
        if (i < m) y[(int64_t)i * n + col] = from_f<T>(acc[r][i] + b);
    }
  }
}

}  // namespace

#endif  // LLMPROF_KERNELS_GEMV_KERNEL_CUH
