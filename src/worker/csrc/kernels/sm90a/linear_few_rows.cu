// y = x·Wᵀ (+ b) for the few rows of a decode step (2 ..= 128 tokens) on Hopper: CUTLASS 3's TMA
// warp-specialized cooperative GEMM with the operands swapped, so that the weight's n rows fill
// the tensor cores' 128-wide M side and the tokens are the narrow N side (yᵀ = W·xᵀ, written
// column-major, which is y row-major), and a stream-K or split-K tile scheduler so that the few
// output tiles of a 4,096-wide projection (32 of 128 rows) still keep every SM loading weights.
// The mainloop keeps as many stages of TMA loads in flight as shared memory holds (8 to 10 at
// these tiles): the weight bytes in flight a decode-step projection needs to run at the DRAM
// bandwidth floor, which cuBLAS's split-K GEMM at 32 and 128 rows did not reach (1.2-1.9× its
// floor: reports/performance-history.md, round 3 session 30).
//
// Built for sm_90a only (build_kernels.rs); the worker calls it on compute capability 9.0 only
// (ffi/kernels_gemm.rs) and uses cuBLAS elsewhere.
#include "../launch.h"
#include "cutlass_launch.h"

#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "cutlass/util/packed_stride.hpp"

namespace {

using namespace cute;

using Element = cutlass::bfloat16_t;
using Accumulator = float;
// Swapped: W [n, k] row-major is A (M = n, k-major); x [m, k] row-major is B (N = m, k-major,
// CUTLASS's "column-major" B); yᵀ [n, m] column-major is y [m, n] row-major.
using LayoutA = cutlass::layout::RowMajor;
using LayoutB = cutlass::layout::ColumnMajor;
using LayoutD = cutlass::layout::ColumnMajor;
constexpr int kAlign = 16 / sizeof(Element);

// The GEMM on TileShape (128 weight rows × tokens × k) with one CTA per cluster, its epilogue
// Fusion (alpha·acc, or alpha·acc + a bias per weight row) in fp32 rounded once to bf16.
template <class TileShape, class Fusion>
struct Config {
  using ClusterShape = Shape<_1, _1, _1>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, Accumulator, Accumulator, void, LayoutD,
      kAlign, Element, LayoutD, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative,
      Fusion>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlign, Element,
      LayoutB, kAlign, Accumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop,
                                                      Epilogue, cutlass::gemm::StreamKScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  static constexpr bool kBias = false;
};

using NoBias = cutlass::epilogue::fusion::LinearCombination<Element, Accumulator, void,
                                                             Accumulator>;
using RowBias = cutlass::epilogue::fusion::LinCombPerRowBias<Element, Accumulator, Element,
                                                              void, Accumulator>;

template <class TileShape>
struct Plain : Config<TileShape, NoBias> {};
template <class TileShape>
struct Biased : Config<TileShape, RowBias> {
  static constexpr bool kBias = true;
};

// How the scheduler splits the work (`decomposition`: CUTLASS's DecompositionMode as an int,
// 0 its heuristic, 1 data-parallel, 2 split-K into `splits`, 3 stream-K).
struct Schedule {
  int decomposition;
  int splits;
};

template <class C>
typename C::Gemm::Arguments arguments(const void* x, const void* w, const void* b, void* y, int m,
                                      int n, int k, Schedule s) {
  using Kernel = typename C::Kernel;
  using StrideA = typename Kernel::StrideA;
  using StrideB = typename Kernel::StrideB;
  using StrideC = typename Kernel::StrideC;
  using StrideD = typename Kernel::StrideD;
  int device = 0;
  cudaGetDevice(&device);
  cutlass::KernelHardwareInfo hw{};
  hw.device_id = device;
  hw.sm_count = llmprof_cutlass::sm_count(device);
  typename C::Gemm::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {n, m, k, 1},
      {static_cast<const Element*>(w), cutlass::make_cute_packed_stride(StrideA{}, {n, k, 1}),
       static_cast<const Element*>(x), cutlass::make_cute_packed_stride(StrideB{}, {m, k, 1})},
      {{},
       nullptr,
       cutlass::make_cute_packed_stride(StrideC{}, {n, m, 1}),
       static_cast<Element*>(y),
       cutlass::make_cute_packed_stride(StrideD{}, {n, m, 1})},
      hw};
  args.epilogue.thread.alpha = 1.f;
  args.epilogue.thread.beta = 0.f;
  if constexpr (C::kBias) args.epilogue.thread.bias_ptr = static_cast<const Element*>(b);
  args.scheduler.decomposition_mode =
      static_cast<cutlass::gemm::kernel::detail::DecompositionMode>(s.decomposition);
  args.scheduler.splits = s.splits;
  return args;
}

template <class C>
int64_t workspace_of(int64_t m, int64_t n, int64_t k, Schedule s) {
  return (int64_t)C::Gemm::get_workspace_size(
      arguments<C>(nullptr, nullptr, nullptr, nullptr, (int)m, (int)n, (int)k, s));
}

// Returns 0, a cudaError_t or −(CUTLASS status) (cutlass_launch.h).
template <class C>
int run(const void* x, const void* w, const void* b, void* y, int64_t m, int64_t n, int64_t k,
        Schedule s, void* workspace, cudaStream_t stream) {
  return llmprof_cutlass::run<typename C::Gemm>(
      arguments<C>(x, w, b, y, (int)m, (int)n, (int)k, s), workspace, stream);
}

}  // namespace

// The tiles llmprof_k_sm90_linear_few_rows runs (`variant`): 128 weight rows by 32, 64 or 128
// tokens, k in steps of 64 or 128.
using T32x64 = Plain<Shape<_128, _32, _64>>;
using T64x64 = Plain<Shape<_128, _64, _64>>;
using T128x64 = Plain<Shape<_128, _128, _64>>;
using T32x128 = Plain<Shape<_128, _32, _128>>;
using T64x128 = Plain<Shape<_128, _64, _128>>;
using T128x128 = Plain<Shape<_128, _128, _128>>;

#define LLMPROF_FEW_ROWS_VARIANTS(CALL) \
  switch (variant) {                    \
    case 0: return CALL(T32x64);        \
    case 1: return CALL(T64x64);        \
    case 2: return CALL(T128x64);       \
    case 3: return CALL(T32x128);       \
    case 4: return CALL(T64x128);       \
    case 5: return CALL(T128x128);      \
    default: break;                     \
  }

extern "C" int64_t llmprof_k_sm90_linear_few_rows_workspace(int64_t m, int64_t n, int64_t k,
                                                            int variant, int decomposition,
                                                            int splits) {
  const Schedule s{decomposition, splits};
#define LLMPROF_WORKSPACE(C) workspace_of<C>(m, n, k, s)
  LLMPROF_FEW_ROWS_VARIANTS(LLMPROF_WORKSPACE)
#undef LLMPROF_WORKSPACE
  return -1;
}

extern "C" int llmprof_k_sm90_linear_few_rows(const void* x, const void* w, const void* b,
                                              void* y, int64_t m, int64_t n, int64_t k,
                                              void* workspace, void* stream, int variant,
                                              int decomposition, int splits) {
  if (m < 1 || n < 1 || k < 1 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX ||
      n % kAlign != 0 || k % kAlign != 0 || decomposition < 0 || decomposition > 3 ||
      splits < 1) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  const Schedule s{decomposition, splits};
#define LLMPROF_RUN(C) run<C>(x, w, b, y, m, n, k, s, workspace, st)
  LLMPROF_FEW_ROWS_VARIANTS(LLMPROF_RUN)
#undef LLMPROF_RUN
  return (int)cudaErrorInvalidValue;
}
