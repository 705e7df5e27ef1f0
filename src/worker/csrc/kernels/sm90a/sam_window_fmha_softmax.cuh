// SAM's windowed attention on CUTLASS's Hopper FMHA (sam_window_fmha.cu): the windows' geometry
// and the softmax specialisation that adds the decomposed relative-position bias to each score.
#ifndef LLMPROF_SM90A_SAM_WINDOW_FMHA_SOFTMAX_CUH
#define LLMPROF_SM90A_SAM_WINDOW_FMHA_SOFTMAX_CUH

#include <cmath>
#include <type_traits>

#include "88_hopper_fmha/collective/fmha_collective_softmax.hpp"
#include "bias_softmax.h"
#include "88_hopper_fmha/collective/fmha_fusion.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"

namespace llmprof_samw {

using Element = cutlass::bfloat16_t;
constexpr int kHeadDim = 64;
constexpr int kWin = 14;                          // the window's side
constexpr int kBoxCols = 16;                      // a window row as the box reads it
constexpr int kKeyRows = 7;                       // window rows per key tile
constexpr int kQueryRows = 4;                     // window rows per warp group
constexpr int kWarpGroups = 2;                    // consumer warp groups (a query tile: 8 rows)
constexpr int kBlockKV = kBoxCols * kKeyRows;     // 112 keys a tile
constexpr int kBlockQ = kBoxCols * kQueryRows * kWarpGroups;  // 128 queries a tile
constexpr int kSeqQ = 2 * kBlockQ;                // two query tiles cover 14 rows
constexpr int kSeqK = 2 * kBlockKV;               // two key tiles: the window's 14 rows
static_assert(kSeqK / kBoxCols == kWin, "two key tiles are the window's rows");

// Where the windows are: the grid and the products.
struct WindowArgs {
  const Element* prod;  // [heads, B·H·W, cols]
  int64_t cols;
  int64_t tokens;  // B·H·W
  int h, w;        // the grid
  int nwx, nwy;    // windows a row, a column
  int heads;
  // The tile a consumer warp group is on (set per tile in Mainloop::compute's copy).
  int window, head;
};

// The mainloop's parameters with the windows' TMA descriptors and arguments beside them.
template <class Base>
struct WithWindows : Base {
  cute::TmaDescriptor tma_q;   // (aligned as CUDA declares it) box 64 × 16 × 4 × 1
  cute::TmaDescriptor tma_kv;  // box 64 × 16 × 7 × 1
  WindowArgs win;
};

// The fusion type: a tag for the softmax specialisation below (two full key tiles:
// DefaultFusion's trip counts).
struct WindowBias : cutlass::fmha::collective::DefaultFusion {};

// The window (batch, row, column) of a window index (row-major windows of each view).
struct WindowAt {
  int b, wy, wx;
  CUTLASS_DEVICE WindowAt(WindowArgs const& a, int index) {
    wx = index % a.nwx;
    const int rest = index / a.nwx;
    wy = rest % a.nwy;
    b = rest / a.nwy;
  }
};

}  // namespace llmprof_samw

namespace cutlass::fmha::collective {

// The softmax of a 64-query × 112-key tile per warp group with the bias added first (a thread's
// two query rows i and, per group n = 0..13, the keys 8n + c + e of the tile).
template <class ElementAccumulator, class Params>
struct CollectiveSoftmax<ElementAccumulator, llmprof_samw::WindowBias, Params>
    : llmprof_cutlass::BiasedSoftmaxSteps<
          CollectiveSoftmax<ElementAccumulator, llmprof_samw::WindowBias, Params>,
          CollectiveSoftmax<ElementAccumulator, DefaultFusion, Params>> {
  using Steps = llmprof_cutlass::BiasedSoftmaxSteps<
      CollectiveSoftmax, CollectiveSoftmax<ElementAccumulator, DefaultFusion, Params>>;
  static constexpr int kRows = 2;
  static constexpr int kGroups = llmprof_samw::kBlockKV / 8;  // 14
  static constexpr int kTileRows = llmprof_samw::kKeyRows;    // 7

  CUTLASS_DEVICE CollectiveSoftmax(Params const& params) : Steps(params) {}

  float pw_[kRows][2][2];                // [row][n mod 2][e]
  float ph_[kRows][llmprof_samw::kWin];  // the rows of this tile first, then the next tile's

  template <class CountMN, class ProblemShape>
  CUTLASS_DEVICE void load_rows(CountMN const& count_mn, ProblemShape const&) {
    static_assert(decltype(size<0>(count_mn))::value == kRows, "two query rows a thread");
    static_assert(decltype(size<1>(count_mn))::value == 2 * kGroups, "28 keys a thread");
    using Raw = std::remove_cv_t<std::remove_reference_t<Params>>;
    const llmprof_samw::WindowArgs& a =
        static_cast<llmprof_samw::WithWindows<Raw> const&>(this->params).win;
    const llmprof_samw::WindowAt at(a, a.window);
    const int c = get<1>(count_mn(0, 0));  // the thread's first column in a group of 8
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kRows; ++i) {
      const int q = get<0>(count_mn(i, 0));
      // Queries outside the window or the grid read a valid token's products: not stored.
      const int qh = min(q / llmprof_samw::kBoxCols, llmprof_samw::kWin - 1);
      const int qw = min(q % llmprof_samw::kBoxCols, llmprof_samw::kWin - 1);
      const int gy = min(at.wy * llmprof_samw::kWin + qh, a.h - 1);
      const int gx = min(at.wx * llmprof_samw::kWin + qw, a.w - 1);
      const int64_t token = ((int64_t)at.b * a.h + gy) * a.w + gx;
      const llmprof_samw::Element* row =
          a.prod + ((int64_t)a.head * a.tokens + token) * a.cols;
      CUTLASS_PRAGMA_UNROLL
      for (int kh = 0; kh < llmprof_samw::kWin; ++kh) {
        ph_[i][kh] = float(row[qh - kh + llmprof_samw::kWin - 1]);
      }
      const llmprof_samw::Element* pw = row + (2 * llmprof_samw::kWin - 1) + qw +
                                        llmprof_samw::kWin - 1;
      CUTLASS_PRAGMA_UNROLL
      for (int half = 0; half < 2; ++half) {
        CUTLASS_PRAGMA_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int kw = 8 * half + c + e;
          pw_[i][half][e] = kw < llmprof_samw::kWin ? float(pw[-kw]) : -INFINITY;
        }
      }
    }
  }

  template <class AccQK, class TiledMmaQK>
  CUTLASS_DEVICE void add_bias(AccQK& acc_qk, TiledMmaQK const& tiled_mma_qk) {
    Tensor acc_mn = make_tensor(acc_qk.data(), layout_acc_mn(tiled_mma_qk, acc_qk.layout()));
    CUTLASS_PRAGMA_UNROLL
    for (int n = 0; n < kGroups; ++n) {
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < kRows; ++i) {
        const float h = ph_[i][n / 2];
        acc_mn(i, 2 * n) += pw_[i][n % 2][0] + h;
        acc_mn(i, 2 * n + 1) += pw_[i][n % 2][1] + h;
      }
    }
    // The next tile's rows move to the front.
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kRows; ++i) {
      CUTLASS_PRAGMA_UNROLL
      for (int r = 0; r < kTileRows; ++r) ph_[i][r] = ph_[i][r + kTileRows];
    }
  }
};

}  // namespace cutlass::fmha::collective

#endif  // LLMPROF_SM90A_SAM_WINDOW_FMHA_SOFTMAX_CUH
