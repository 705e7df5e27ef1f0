// SAM's windowed attention (14×14 windows) in CUTLASS's Hopper flash-attention kernel, read by
// TMA straight from the qkv Linear's output on the grid and written straight back to the grid
// for the projection: no window partition, no q′/k′ pack, no padded copy (docs/performance.md,
// "Round 2, session 17").
//
// How the windows are read: a 4-D TMA descriptor over qkv [B, H, W, 3·C] (channels, columns,
// rows, batch) with a box of 64 channels × 16 columns × r rows. A window starts at column 14·wx,
// row 14·wy; its 14 columns are read as 16 (the box's last two columns are the next window's or
// past the grid, and are masked as keys), its rows as two key tiles of 7 (112 keys a tile) and
// four query blocks of 4 (64 queries a warp group; the last block's two extra rows are computed
// and not stored). Tokens past the grid read as zero, which is what SAM's zero padding after
// the norm gives once the qkv Linear's k and v biases are taken out of k and v: q·b_k is the
// same for every key of a query (the softmax does not see it) and the weights sum to one, so b_v
// comes back through the projection's bias (the caller's part: vision/sam_window_fmha.rs).
//
// The bias: score(q, k) += Ph[q, qh − kh + 13] + Pw[q, qw − kw + 13] (the query's products with
// the √64-scaled tables, one GEMM's output, as sam_global_attention.cu takes them), −∞ for the
// box's two extra columns. A thread's keys are, per 8-key group n, the row kh = 7t + n/2 of tile
// t and the columns 8·(n mod 2) + c + e (c = 2·(lane mod 4), e = 0, 1): four Pw values per query
// row for the whole window and fourteen Ph values, loaded once per query tile.
// Persistent: one block per SM walks the tiles, its producer warp loading the next tile's boxes
// while the two consumer warp groups work on this one (one block per window was latency-bound:
// two key tiles a block).
// Built for sm_90a only (build_kernels.rs); ffi/kernels_gemm.rs says where it runs.
#include "../launch.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "88_hopper_fmha/collective/fmha_collective_softmax.hpp"
#include "88_hopper_fmha/collective/fmha_epilogue.hpp"
#include "88_hopper_fmha/collective/fmha_fusion.hpp"
#include "88_hopper_fmha/device/device_universal.hpp"
#include "88_hopper_fmha/kernel/fmha_kernel_builder.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cuda_host_adapter.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/kernel_hardware_info.h"

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
    : CollectiveSoftmax<ElementAccumulator, DefaultFusion, Params> {
  using Base = CollectiveSoftmax<ElementAccumulator, DefaultFusion, Params>;
  static constexpr int kRows = 2;
  static constexpr int kGroups = llmprof_samw::kBlockKV / 8;  // 14
  static constexpr int kTileRows = llmprof_samw::kKeyRows;    // 7

  CUTLASS_DEVICE CollectiveSoftmax(Params const& params) : Base(params) {}

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

  // The first key tile (the mainloop's five-argument step): load the rows, then the bias.
  template <class AccQK, class TiledMmaQK, class CountQK, class State, class ProblemShape>
  CUTLASS_DEVICE auto step(AccQK& acc_qk, TiledMmaQK const& tiled_mma_qk, CountQK const& count_qk,
                           State& state, ProblemShape const& problem_shape) {
    Tensor count_mn = make_tensor(count_qk.data(), layout_acc_mn(tiled_mma_qk, count_qk.layout()));
    load_rows(count_mn, problem_shape);
    add_bias(acc_qk, tiled_mma_qk);
    return Base::step(acc_qk, tiled_mma_qk, count_qk, state, problem_shape);
  }

  // The second key tile.
  template <bool kUseFusion = true, class AccQK, class TiledMmaQK, class CountQK, class State,
            class AccPV, class TiledMmaPV, class ProblemShape>
  CUTLASS_DEVICE auto step(AccQK& acc_qk, TiledMmaQK const& tiled_mma_qk, CountQK const& count_qk,
                           State& state, AccPV& acc_pv, TiledMmaPV const& tiled_mma_pv,
                           ProblemShape const& problem_shape) {
    add_bias(acc_qk, tiled_mma_qk);
    return Base::template step<false>(acc_qk, tiled_mma_qk, count_qk, state, acc_pv, tiled_mma_pv,
                                      problem_shape);
  }
};

}  // namespace cutlass::fmha::collective

namespace {

using namespace cute;
using llmprof_samw::Element;

using StrideQKV = cute::tuple<int, _1, cute::tuple<int, int>>;
using TileShape = Shape<Int<llmprof_samw::kBlockQ>, Int<llmprof_samw::kBlockKV>,
                        Int<llmprof_samw::kHeadDim>>;
using Options = cutlass::fmha::kernel::Option<cutlass::fmha::kernel::Tag::kNumMmaWarpGroups,
                                              Int<llmprof_samw::kWarpGroups>>;
// Persistent: one block per SM walks the tiles (two query tiles per window, then the next
// window), its producer loading the next tile's q, k and v while the consumers work.
using StageOption =
    cutlass::fmha::kernel::Option<cutlass::fmha::kernel::Tag::kStagesKV, Int<8>>;
using StageQOption =
    cutlass::fmha::kernel::Option<cutlass::fmha::kernel::Tag::kStagesQ, Int<4>>;
using PersistentOption =
    cutlass::fmha::kernel::Option<cutlass::fmha::kernel::Tag::kIsPersistent, cute::true_type>;

// The Hopper FMHA's mainloop with its loads replaced: q, k and v by the windows' 4-D TMA boxes.
struct Mainloop : cutlass::fmha::collective::FmhaMainloopTmaWarpSpecialized<
                      Element, float, float, TileShape, StrideQKV, StrideQKV, StrideQKV,
                      llmprof_samw::WindowBias, Options, StageOption, StageQOption,
                      PersistentOption> {
  using Base = typename Mainloop::FmhaMainloopTmaWarpSpecialized;
  struct Arguments {
    const Element* qkv;  // [B, H, W, 3·heads·64]
    int batch, h, w, heads;
    llmprof_samw::WindowArgs win;
  };
  using Params = llmprof_samw::WithWindows<typename Base::Params>;

  template <class ProblemShape>
  static bool can_implement(ProblemShape const&, Arguments const&) {
    return true;
  }

  // A descriptor over qkv as (channels, columns, rows, batch) with a box of 64 × 16 × rows × 1,
  // 128-byte swizzle (the wgmma operands' shared-memory layout), zeros past the grid.
  static bool encode(cute::TmaDescriptor* desc, Arguments const& a, int rows) {
    const cuuint64_t c3 = 3ull * a.heads * llmprof_samw::kHeadDim;
    cuuint64_t dims[4] = {c3, (cuuint64_t)a.w, (cuuint64_t)a.h, (cuuint64_t)a.batch};
    cuuint64_t strides[3] = {c3 * sizeof(Element), c3 * a.w * sizeof(Element),
                             c3 * a.w * a.h * sizeof(Element)};
    cuuint32_t box[4] = {llmprof_samw::kHeadDim, llmprof_samw::kBoxCols, (cuuint32_t)rows, 1};
    cuuint32_t unit[4] = {1, 1, 1, 1};
    const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
        desc, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<Element*>(a.qkv), dims, strides,
        box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS;
  }

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const& problem_size, Arguments const& args,
                                        void*) {
    Params params{};
    const float d = (float)get<4>(problem_size);
    params.scale_softmax = 1.0f / std::sqrt(d);
    params.scale_softmax_log2 = (float)(std::log2(std::exp(1.0)) / std::sqrt(d));
    params.rp_dropout = 1.0f;
    params.win = args.win;
    // A failed encoding leaves a zero descriptor; launch() checks encode() first.
    encode(&params.tma_q, args, llmprof_samw::kQueryRows);
    encode(&params.tma_kv, args, llmprof_samw::kKeyRows);
    return params;
  }

  // The library's compute with the tile's window and head in a copy of the parameters, where
  // the softmax reads them.
  template <class BlkCoord, class ProblemShape, class... Rest>
  CUTLASS_DEVICE auto compute(BlkCoord const& blk_coord, BlkCoord const& wg_coord,
                              Params const& params, ProblemShape const& problem_size,
                              Rest&... rest) {
    Params tile = params;
    tile.win.window = get<2, 0>(blk_coord);
    tile.win.head = get<2, 1>(blk_coord);
    return Base::compute(blk_coord, wg_coord, tile, problem_size, rest...);
  }

  CUTLASS_DEVICE static void prefetch_tma_descriptors(Params const& params) {
    cute::prefetch_tma_descriptor(&params.tma_q);
    cute::prefetch_tma_descriptor(&params.tma_kv);
  }

  // One box into stage `stage` of `smem` (elements per stage: `stage_elems`).
  template <class Pipeline, class State>
  CUTLASS_DEVICE static void load_box(Pipeline& pipeline, State& state, const void* desc,
                                      Element* smem, int stage_elems, int channel, int col,
                                      int row, int b) {
    pipeline.producer_acquire(state);
    auto* bar = pipeline.producer_get_barrier(state);
    SM90_TMA_LOAD_4D::copy(desc, reinterpret_cast<uint64_t*>(bar),
                           static_cast<uint64_t>(TMA::CacheHintSm90::EVICT_NORMAL),
                           smem + state.index() * stage_elems, channel, col, row, b);
    ++state;
  }

  // The producer: q of both warp groups, then k and v of the window's two key tiles, in the
  // order the library's loader issues them (q0, k0, q1, v0, k1, v1).
  template <bool kLoadQ, class BlkCoord, class ProblemShape, class LoadWarpBarrier>
  CUTLASS_DEVICE void load_kv_maybe_q(int, BlkCoord const& blk_coord, Params const& params,
                                      ProblemShape const&, MainloopPipeline& pipeline,
                                      PipelineState& smem_pipe_write,
                                      MainloopPipelineQ& pipeline_q,
                                      PipelineStateQ& smem_pipe_write_q, SharedStorage& storage,
                                      LoadWarpBarrier&, bool) {
    static_assert(kLoadQ, "q is loaded by the k/v warp");
    if (cute::elect_one_sync() == 0) return;
    const llmprof_samw::WindowAt at(params.win, get<2, 0>(blk_coord));
    const int head = get<2, 1>(blk_coord);
    // q, k and v of the head: channels head·64 of the qkv Linear's three parts.
    const int c = params.win.heads * llmprof_samw::kHeadDim;
    const int cq = head * llmprof_samw::kHeadDim, ck = cq + c, cv = cq + 2 * c;
    const int x0 = at.wx * llmprof_samw::kWin, y0 = at.wy * llmprof_samw::kWin;
    const int qrow0 = y0 + get<0>(blk_coord) * llmprof_samw::kQueryRows * llmprof_samw::kWarpGroups;
    constexpr int kQElems = llmprof_samw::kBlockQ / llmprof_samw::kWarpGroups * llmprof_samw::kHeadDim;
    constexpr int kKVElems = llmprof_samw::kBlockKV * llmprof_samw::kHeadDim;
    Element* sq = storage.smem_q.data();
    Element* sk = storage.smem_k.data();
    Element* sv = storage.smem_v.data();
    load_box(pipeline_q, smem_pipe_write_q, &params.tma_q, sq, kQElems, cq, x0, qrow0, at.b);
    load_box(pipeline, smem_pipe_write, &params.tma_kv, sk, kKVElems, ck, x0, y0, at.b);
    load_box(pipeline_q, smem_pipe_write_q, &params.tma_q, sq, kQElems, cq, x0,
             qrow0 + llmprof_samw::kQueryRows, at.b);
    load_box(pipeline, smem_pipe_write, &params.tma_kv, sv, kKVElems, cv, x0, y0, at.b);
    load_box(pipeline, smem_pipe_write, &params.tma_kv, sk, kKVElems, ck, x0,
             y0 + llmprof_samw::kKeyRows, at.b);
    load_box(pipeline, smem_pipe_write, &params.tma_kv, sv, kKVElems, cv, x0,
             y0 + llmprof_samw::kKeyRows, at.b);
  }
};

// The output written to the grid from the accumulators: a warp group's 64 queries are 4 window
// rows of 16; the columns past the window's 14 and the rows past its 14 or the grid are not
// stored. Two adjacent channels a store.
struct Epilogue
    : cutlass::fmha::collective::FmhaFwdEpilogue<Element, float, typename Mainloop::TileShapePV> {
  struct Arguments {
    Element* out;  // [B, H, W, heads·64]
    llmprof_samw::WindowArgs win;
  };
  using Params = Arguments;

  template <class ProblemShape>
  static Params to_underlying_arguments(ProblemShape const&, Arguments const& args, void* = nullptr) {
    return args;
  }

  template <class TileShapeWG, class BlkCoord, class ResultTuple, class TiledMma, class ProblemShape,
            class LoadPipeline, class Storage>
  CUTLASS_DEVICE void operator()(TileShapeWG const& tile_shape, BlkCoord const& wg_coord,
                                 ResultTuple const& result, TiledMma const& tiled_mma,
                                 ProblemShape const&, Params const& params, LoadPipeline,
                                 Storage&) {
    auto acc = get<0>(result);
    auto thr_mma = tiled_mma.get_thread_slice(threadIdx.x);
    Tensor cO = make_identity_tensor(take<0, 2>(tile_shape));
    Tensor tOcO = thr_mma.partition_C(cO);
    Tensor acc_mn = make_tensor(acc.data(), cutlass::fmha::collective::layout_acc_mn(tiled_mma, acc.layout()));
    Tensor c_mn = make_tensor(tOcO.data(), cutlass::fmha::collective::layout_acc_mn(tiled_mma, tOcO.layout()));
    const llmprof_samw::WindowArgs& a = params.win;
    const llmprof_samw::WindowAt at(a, get<2, 0>(wg_coord));
    const int head = get<2, 1>(wg_coord);
    const int heads = a.heads;
    const int q0 = get<0>(wg_coord) * get<0>(tile_shape);
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < size<0>(acc_mn); ++i) {
      const int q = q0 + get<0>(c_mn(i, 0));
      const int qh = q / llmprof_samw::kBoxCols, qw = q % llmprof_samw::kBoxCols;
      const int gy = at.wy * llmprof_samw::kWin + qh, gx = at.wx * llmprof_samw::kWin + qw;
      if (qh >= llmprof_samw::kWin || qw >= llmprof_samw::kWin || gy >= a.h || gx >= a.w) continue;
      Element* dst = params.out +
                     ((((int64_t)at.b * a.h + gy) * a.w + gx) * heads + head) *
                         llmprof_samw::kHeadDim;
      CUTLASS_PRAGMA_UNROLL
      for (int j = 0; j < size<1>(acc_mn); j += 2) {
        const int d = get<1>(c_mn(i, j));
        __nv_bfloat162 v = __floats2bfloat162_rn(acc_mn(i, j), acc_mn(i, j + 1));
        *reinterpret_cast<__nv_bfloat162*>(dst + d) = v;
      }
    }
  }
};

using Attention = cutlass::device::Universal<cutlass::fmha::kernel::FmhaKernelTmaWarpSpecialized<
    Mainloop, Epilogue, cutlass::fmha::kernel::PersistentTileScheduler, Options>>;

int launch(const void* qkv, const void* prod, int64_t prod_cols, void* out, int batch, int h,
           int w, int heads, cudaStream_t stream) {
  using Op = Attention;
  const int nwx = (w + llmprof_samw::kWin - 1) / llmprof_samw::kWin;
  const int nwy = (h + llmprof_samw::kWin - 1) / llmprof_samw::kWin;
  const int windows = batch * nwx * nwy;
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return (int)e;
  if (device < 0 || device >= 64) return (int)cudaErrorInvalidDevice;
  static bool smem_limit_set[64] = {};
  if (!smem_limit_set[device]) {
    e = cudaFuncSetAttribute(cutlass::device_kernel<typename Op::Kernel>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)Op::Kernel::SharedStorageSize);
    if (e != cudaSuccess) return (int)e;
    smem_limit_set[device] = true;
  }
  const llmprof_samw::WindowArgs win{static_cast<const Element*>(prod), prod_cols,
                                     (int64_t)batch * h * w, h, w, nwx, nwy, heads, 0, 0};
  static int sm_count[64] = {};
  if (sm_count[device] == 0) {
    e = cudaDeviceGetAttribute(&sm_count[device], cudaDevAttrMultiProcessorCount, device);
    if (e != cudaSuccess) return (int)e;
  }
  cutlass::KernelHardwareInfo hw{};
  hw.device_id = device;
  hw.sm_count = sm_count[device];
  typename Op::Arguments args{
      {windows, heads, llmprof_samw::kSeqQ, llmprof_samw::kSeqK, llmprof_samw::kHeadDim},
      {static_cast<const Element*>(qkv), batch, h, w, heads, win},
      {static_cast<Element*>(out), win},
      hw};
  cute::TmaDescriptor probe{};
  if (!Mainloop::encode(&probe, args.mainloop, llmprof_samw::kKeyRows)) {
    return -(int)cutlass::Status::kErrorInvalidProblem;
  }
  Op op;
  cutlass::Status status = op.can_implement(args);
  if (status == cutlass::Status::kSuccess) status = op.initialize(args, nullptr, stream);
  if (status != cutlass::Status::kSuccess) {
    e = cudaGetLastError();
    return e != cudaSuccess ? (int)e : -(int)status;
  }
  status = op.run(stream);
  e = cudaGetLastError();
  if (e != cudaSuccess) return (int)e;
  return status == cutlass::Status::kSuccess ? 0 : -(int)status;
}

}  // namespace

extern "C" int llmprof_k_sm90_sam_window_fmha_fits(int64_t window, int64_t head_dim) {
  return window == llmprof_samw::kWin && head_dim == llmprof_samw::kHeadDim;
}

extern "C" int llmprof_k_sm90_sam_window_fmha(const void* qkv, const void* prod, int64_t prod_cols,
                                              void* out, int64_t batch, int64_t h, int64_t w,
                                              int64_t heads, void* stream) {
  const int64_t windows = batch * ((h + 13) / 14) * ((w + 13) / 14);
  if (batch < 1 || h < 1 || w < 1 || heads < 1 || heads > 65535 || windows > 65535 ||
      prod_cols < 4 * llmprof_samw::kWin - 2 || prod_cols > INT32_MAX ||
      batch * h * w > INT32_MAX) {
    return (int)cudaErrorInvalidValue;
  }
  return launch(qkv, prod, prod_cols, out, (int)batch, (int)h, (int)w, (int)heads,
                static_cast<cudaStream_t>(stream));
}
