// SAM's global attention with its decomposed relative-position bias added inside a Hopper
// flash-attention kernel: q·k stays 64 wide (the folded-bias path widens it to 192 for cuDNN and
// packs q′/k′ for it), q, k and v are read by TMA where the qkv Linear wrote them, and the output
// is written token-major for the projection
// (reports/performance-history.md, "Round 2, session 16").
//
// The kernel is CUTLASS's Hopper FMHA (examples/88_hopper_fmha, the nvidia-cutlass wheel's copy:
// TMA loads by a producer warp group, three consumer warp groups of 64 queries sharing a
// 192-query tile, wgmma, online softmax). Its customisation point `before_softmax` gets neither
// arguments nor state, so the bias is added by a specialisation of its softmax collective for
// llmprof's fusion type, which reads the bias's arguments from the mainloop's parameters (a
// mainloop type that carries them) and keeps per-thread state across key tiles:
//   score(q, k) += Ph[q, qh − kh + G − 1] + Pw[q, qw − kw + G − 1]
// (Ph, Pw: the query's products with the √64-scaled resized tables, one GEMM's output; q = qh·G +
// qw and k = kh·G + kw on the G×G grid). A thread's Pw values are loaded once per query tile and
// kept in registers; each key tile costs a few Ph loads per row, issued one tile ahead.
// Built for sm_90a only (build_kernels.rs); ffi/kernels_gemm.rs says where it runs.
// Three consumer warp groups beat two by 0.11–0.14 ms per call of 8 pages
// (reports/performance-history.md).
#include "../launch.h"
#include "cutlass_launch.h"

#include <cuda_runtime.h>

#include <type_traits>

#include "88_hopper_fmha/collective/fmha_collective_softmax.hpp"
#include "bias_softmax.h"
#include "88_hopper_fmha/collective/fmha_fusion.hpp"
#include "88_hopper_fmha/device/device_universal.hpp"
#include "88_hopper_fmha/kernel/fmha_kernel_builder.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/kernel_hardware_info.h"

namespace llmprof_sam {

using Element = cutlass::bfloat16_t;
constexpr int kHeadDim = 64;

// Where the bias comes from: the products [heads, batch·tokens, cols] of each token's q with
// both resized tables.
struct BiasArgs {
  const Element* prod;
  int64_t cols;
  int64_t batch_tokens;
};

// The mainloop's arguments and parameters with the bias's beside them: the kernel keeps the
// mainloop's Params by value and hands the softmax collective a reference to them as the
// library's own Params type, which the softmax below casts back (see Mainloop).
template <class Base>
struct WithBias : Base {
  BiasArgs bias;
};

// The fusion type: only a tag for the softmax specialisation below (the trip counts are
// DefaultFusion's: every key tile is full, the key count G² being a multiple of kBlockKV).
template <int G, int kBlockKV>
struct RelPosBias : cutlass::fmha::collective::DefaultFusion {
  static_assert(G % 8 == 0 && kBlockKV == 64, "grid sides of whole 8-key groups, 64-key tiles");
};

}  // namespace llmprof_sam

namespace cutlass::fmha::collective {

// The softmax of a 64-query × 64-key tile per warp group with the bias added first. A thread
// holds two query rows and, in each, the keys 8n + c + e of the tile (n = 0..7, e = 0, 1, c =
// 2·(lane % 4): Hopper's accumulator layout, column j = 2n + e of the row-major view).
//   Pw: a key's column kw = k mod G. Over the grid's G/8 groups of 8 columns a thread needs two
//     values per row and group ("phase"), loaded once per query tile; tile t's group n is phase
//     (8t + n) mod (G/8), so after each tile the phases rotate by 8 mod (G/8) in registers and
//     group n always reads phase n.
//   Ph: a key's grid row kh = k div G. The 64 keys of a tile span at most kPh grid rows: their Ph
//     values are loaded one tile ahead (the loads' latency hides behind a tile's work), group n
//     taking the one of row (64t mod G + 8n) div G after the tile's first.
template <class ElementAccumulator, int G, int kBlockKV, class Params>
struct CollectiveSoftmax<ElementAccumulator, llmprof_sam::RelPosBias<G, kBlockKV>, Params>
    : llmprof_cutlass::BiasedSoftmaxSteps<
          CollectiveSoftmax<ElementAccumulator, llmprof_sam::RelPosBias<G, kBlockKV>, Params>,
          CollectiveSoftmax<ElementAccumulator, DefaultFusion, Params>> {
  using Steps = llmprof_cutlass::BiasedSoftmaxSteps<
      CollectiveSoftmax, CollectiveSoftmax<ElementAccumulator, DefaultFusion, Params>>;
  static constexpr int kRows = 2;
  static constexpr int kGroups = 8;
  static constexpr int kPhases = G / 8;
  static constexpr int kShift = kGroups % kPhases;
  static constexpr bool kAligned = kBlockKV % G == 0;
  static constexpr int kPh = kAligned ? kBlockKV / G : (kBlockKV - 8 + G - 1) / G + 1;

  CUTLASS_DEVICE CollectiveSoftmax(Params const& params) : Steps(params) {}

  const llmprof_sam::Element* row_[kRows];  // the query's products
  int qh_[kRows];                           // qh + G − 1: Ph's index of grid row 0
  float pw_[kRows][kPhases][2];
  float ph_[kRows][kPh];  // the next tile's
  int kh0_ = 0;           // the next tile's first grid row
  int r0_ = 0;            // the next tile's first key mod G

  // Loads the Ph values of the tile starting at grid row kh0_ (rows past the grid's last are
  // clamped: the tile after the last is never used).
  CUTLASS_DEVICE void prefetch_ph() {
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kRows; ++i) {
      CUTLASS_PRAGMA_UNROLL
      for (int r = 0; r < kPh; ++r) ph_[i][r] = float(row_[i][qh_[i] - min(kh0_ + r, G - 1)]);
    }
  }

  template <class CountMN, class ProblemShape>
  CUTLASS_DEVICE void load_rows(CountMN const& count_mn, ProblemShape const& problem_shape) {
    static_assert(decltype(size<0>(count_mn))::value == kRows, "two query rows a thread");
    static_assert(decltype(size<1>(count_mn))::value == 2 * kGroups, "16 keys a thread");
    // The object behind the library's Params reference is the mainloop's WithBias<Params>.
    const llmprof_sam::BiasArgs args =
        static_cast<llmprof_sam::WithBias<std::remove_cv_t<std::remove_reference_t<Params>>> const&>(
            this->params)
            .bias;
    const int tokens = get<2>(problem_shape);
    // IndividualTileScheduler's grid: x the query tiles, y the batch, z the heads.
    const int64_t row0 = (int64_t)blockIdx.z * args.batch_tokens + (int64_t)blockIdx.y * tokens;
    // The thread's column offsets in a group of 8 (the first tile's keys 0..7).
    const int c0 = get<1>(count_mn(0, 0)), c1 = get<1>(count_mn(0, 1));
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kRows; ++i) {
      // Queries past the last (a partial query tile) read the last one's row: their output is
      // not stored.
      const int q = min((int)get<0>(count_mn(i, 0)), tokens - 1);
      row_[i] = args.prod + (row0 + q) * args.cols;
      qh_[i] = q / G + G - 1;
      const llmprof_sam::Element* pw = row_[i] + (2 * G - 1) + (q % G + G - 1);
      CUTLASS_PRAGMA_UNROLL
      for (int m = 0; m < kPhases; ++m) {
        pw_[i][m][0] = float(pw[-(8 * m + c0)]);
        pw_[i][m][1] = float(pw[-(8 * m + c1)]);
      }
    }
    kh0_ = 0;
    r0_ = 0;
    prefetch_ph();
  }

  template <class AccQK, class TiledMmaQK>
  CUTLASS_DEVICE void add_bias(AccQK& acc_qk, TiledMmaQK const& tiled_mma_qk) {
    Tensor acc_mn = make_tensor(acc_qk.data(), layout_acc_mn(tiled_mma_qk, acc_qk.layout()));
    float ph[kRows][kPh];
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kRows; ++i) {
      CUTLASS_PRAGMA_UNROLL
      for (int r = 0; r < kPh; ++r) ph[i][r] = ph_[i][r];
    }
    const int r0 = r0_;
    CUTLASS_PRAGMA_UNROLL
    for (int n = 0; n < kGroups; ++n) {
      // Which of the tile's grid rows group n is on.
      int off = kAligned ? 8 * n / G : 0;
      if constexpr (!kAligned) {
        CUTLASS_PRAGMA_UNROLL
        for (int r = 1; r < kPh; ++r) off += r0 + 8 * n >= r * G ? 1 : 0;
      }
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < kRows; ++i) {
        float h = ph[i][0];
        CUTLASS_PRAGMA_UNROLL
        for (int r = 1; r < kPh; ++r) h = off == r ? ph[i][r] : h;
        acc_mn(i, 2 * n) += pw_[i][n % kPhases][0] + h;
        acc_mn(i, 2 * n + 1) += pw_[i][n % kPhases][1] + h;
      }
    }
    // The next tile: its Ph values on their way, the phases rotated.
    r0_ = r0 + kBlockKV;
    kh0_ += r0_ / G;
    r0_ %= G;
    prefetch_ph();
    if constexpr (kShift != 0) {
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < kRows; ++i) {
        float rotated[kPhases][2];
        CUTLASS_PRAGMA_UNROLL
        for (int m = 0; m < kPhases; ++m) {
          rotated[m][0] = pw_[i][(m + kShift) % kPhases][0];
          rotated[m][1] = pw_[i][(m + kShift) % kPhases][1];
        }
        CUTLASS_PRAGMA_UNROLL
        for (int m = 0; m < kPhases; ++m) {
          pw_[i][m][0] = rotated[m][0];
          pw_[i][m][1] = rotated[m][1];
        }
      }
    }
  }
};

}  // namespace cutlass::fmha::collective

namespace {

using namespace cute;
using llmprof_sam::Element;

// q, k, v and o as (tokens, head_dim, (batch, heads)) with strides in elements.
using StrideQKV = cute::tuple<int, _1, cute::tuple<int, int>>;
using StrideLse = cute::tuple<_1, cute::tuple<int, int>>;

// The Hopper FMHA's mainloop with the bias's arguments carried in its Params (the library's
// fusion hook takes none). kWarpGroups consumer warp groups of 64 queries each share a query
// tile; a producer warp group loads q, k and v by TMA.
template <int G, int kWarpGroups>
struct Mainloop
    : cutlass::fmha::collective::FmhaMainloopTmaWarpSpecialized<
          Element, float, float, Shape<Int<64 * kWarpGroups>, _64, Int<llmprof_sam::kHeadDim>>,
          StrideQKV, StrideQKV, StrideQKV, llmprof_sam::RelPosBias<G, 64>,
          cutlass::fmha::kernel::Option<cutlass::fmha::kernel::Tag::kNumMmaWarpGroups,
                                        Int<kWarpGroups>>> {
  using Base = typename Mainloop::FmhaMainloopTmaWarpSpecialized;
  using Arguments = llmprof_sam::WithBias<typename Base::Arguments>;
  using Params = llmprof_sam::WithBias<typename Base::Params>;

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_size, Arguments const& args,
                                        void* workspace) {
    Params params;
    static_cast<typename Base::Params&>(params) =
        Base::to_underlying_arguments(problem_size, args, workspace);
    params.bias = args.bias;
    return params;
  }
};

template <int G, int kWarpGroups>
using Attention = cutlass::device::Universal<cutlass::fmha::kernel::FmhaKernelTmaWarpSpecialized<
    Mainloop<G, kWarpGroups>,
    cutlass::fmha::collective::FmhaFwdEpilogue<
        Element, float, typename Mainloop<G, kWarpGroups>::TileShapePV>,
    cutlass::fmha::kernel::IndividualTileScheduler,
    cutlass::fmha::kernel::Option<cutlass::fmha::kernel::Tag::kNumMmaWarpGroups,
                                  Int<kWarpGroups>>>>;

// Returns 0, a cudaError_t or −(CUTLASS status) (cutlass_launch.h).
template <int G, int kWarpGroups>
int launch(const void* qkv, const void* prod, int64_t prod_cols, void* out, void* lse, int batch,
           int heads, cudaStream_t stream) {
  using Op = Attention<G, kWarpGroups>;
  const int tokens = G * G, c = heads * llmprof_sam::kHeadDim;
  const auto base = static_cast<const Element*>(qkv);
  // qkv [batch, tokens, 3, heads, 64]; out [batch, tokens, heads, 64].
  const StrideQKV in = make_stride(3 * c, _1{}, make_stride(tokens * 3 * c, llmprof_sam::kHeadDim));
  const StrideQKV o = make_stride(c, _1{}, make_stride(tokens * c, llmprof_sam::kHeadDim));
  const StrideLse dl = make_stride(_1{}, make_stride(heads * tokens, tokens));
  int device = 0;
  int rc = llmprof_cutlass::current_device(device);
  if (rc == 0) rc = llmprof_cutlass::raise_smem_limit<Op>(device);
  if (rc != 0) return rc;
  cutlass::KernelHardwareInfo hw{};  // the tile scheduler needs no SM count
  hw.device_id = device;
  typename Op::Arguments args{
      {batch, heads, tokens, tokens, llmprof_sam::kHeadDim},
      {},
      {static_cast<Element*>(out), o, static_cast<float*>(lse), dl},
      hw};
  args.mainloop.ptr_Q = base;
  args.mainloop.dQ = in;
  args.mainloop.ptr_K = base + c;
  args.mainloop.dK = in;
  args.mainloop.ptr_V = base + 2 * c;
  args.mainloop.dV = in;
  args.mainloop.bias = {static_cast<const Element*>(prod), prod_cols, (int64_t)batch * tokens};
  return llmprof_cutlass::run<Op>(args, nullptr, stream);
}

}  // namespace

extern "C" int llmprof_k_sm90_sam_global_attention_fits(int64_t grid, int64_t head_dim) {
  return head_dim == llmprof_sam::kHeadDim && (grid == 64 || grid == 40 || grid == 32 || grid == 80);
}

extern "C" int llmprof_k_sm90_sam_global_attention(const void* qkv, const void* prod,
                                                   int64_t prod_cols, void* out, void* lse,
                                                   int64_t batch, int64_t grid, int64_t heads,
                                                   void* stream) {
  if (batch < 1 || heads < 1 || batch > 65535 || heads > 65535 ||
      prod_cols < 4 * grid - 2 || prod_cols > INT32_MAX ||
      batch * grid * grid * 3 * heads * llmprof_sam::kHeadDim > INT32_MAX) {
    return (int)cudaErrorInvalidValue;
  }
  auto st = static_cast<cudaStream_t>(stream);
  const int b = (int)batch, h = (int)heads;
  switch (grid) {
    case 64: return launch<64, 3>(qkv, prod, prod_cols, out, lse, b, h, st);
    case 40: return launch<40, 3>(qkv, prod, prod_cols, out, lse, b, h, st);
    case 32: return launch<32, 3>(qkv, prod, prod_cols, out, lse, b, h, st);
    case 80: return launch<80, 3>(qkv, prod, prod_cols, out, lse, b, h, st);
    default: return (int)cudaErrorInvalidValue;
  }
}
