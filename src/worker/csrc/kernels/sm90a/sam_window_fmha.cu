// SAM's windowed attention (14×14 windows) in CUTLASS's Hopper flash-attention kernel, read by
// TMA straight from the qkv Linear's output on the grid and written straight back to the grid
// for the projection: no window partition, no q′/k′ pack, no padded copy
// (reports/performance-history.md, "Round 2, session 17").
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
// Persistent: one block per SM takes tiles in turn, its producer warp loading the next tile's
// boxes while the two consumer warp groups work on this one (a block per tile was
// latency-bound: two key tiles a block). Geometry and softmax: sam_window_fmha_softmax.cuh.
// Built for sm_90a only (build_kernels.rs); ffi/kernels_gemm.rs says where it runs.
#include "../launch.h"
#include "cutlass_launch.h"
#include "sam_window_fmha_softmax.cuh"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "88_hopper_fmha/collective/fmha_epilogue.hpp"
#include "88_hopper_fmha/device/device_universal.hpp"
#include "88_hopper_fmha/kernel/fmha_kernel_builder.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cuda_host_adapter.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/kernel_hardware_info.h"


namespace {

using namespace cute;
using llmprof_samw::Element;

using StrideQKV = cute::tuple<int, _1, cute::tuple<int, int>>;
using TileShape = Shape<Int<llmprof_samw::kBlockQ>, Int<llmprof_samw::kBlockKV>,
                        Int<llmprof_samw::kHeadDim>>;
using Options = cutlass::fmha::kernel::Option<cutlass::fmha::kernel::Tag::kNumMmaWarpGroups,
                                              Int<llmprof_samw::kWarpGroups>>;
// Persistent: one block per SM, each taking every SM-count-th tile (tiles in the order query
// tile, window, head), its producer loading the next tile's q, k and v while the consumers work.
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
    cute::TmaDescriptor tma_q, tma_kv;  // encode()'s, over qkv [B, H, W, 3·heads·64]
    llmprof_samw::WindowArgs win;
  };
  using Params = llmprof_samw::WithWindows<typename Base::Params>;

  template <class ProblemShape>
  static bool can_implement(ProblemShape const&, Arguments const&) {
    return true;
  }

  // A descriptor over qkv [batch, h, w, 3·heads·64] as (channels, columns, rows, batch) with a
  // box of 64 × 16 × rows × 1, 128-byte swizzle (the wgmma operands' shared-memory layout), zeros
  // past the grid.
  static bool encode(cute::TmaDescriptor* desc, const Element* qkv, int batch, int h, int w,
                     int heads, int rows) {
    const cuuint64_t c3 = 3ull * heads * llmprof_samw::kHeadDim;
    cuuint64_t dims[4] = {c3, (cuuint64_t)w, (cuuint64_t)h, (cuuint64_t)batch};
    cuuint64_t strides[3] = {c3 * sizeof(Element), c3 * w * sizeof(Element),
                             c3 * w * h * sizeof(Element)};
    cuuint32_t box[4] = {llmprof_samw::kHeadDim, llmprof_samw::kBoxCols, (cuuint32_t)rows, 1};
    cuuint32_t unit[4] = {1, 1, 1, 1};
    const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
        desc, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<Element*>(qkv), dims, strides,
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
    params.tma_q = args.tma_q;
    params.tma_kv = args.tma_kv;
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

// Returns 0, a cudaError_t or −(CUTLASS status) (cutlass_launch.h); −kErrorInvalidProblem when the
// driver refuses a TMA descriptor.
int launch(const void* qkv, const void* prod, int64_t prod_cols, void* out, int batch, int h,
           int w, int heads, cudaStream_t stream) {
  using Op = Attention;
  const int nwx = (w + llmprof_samw::kWin - 1) / llmprof_samw::kWin;
  const int nwy = (h + llmprof_samw::kWin - 1) / llmprof_samw::kWin;
  int device = 0;
  int rc = llmprof_cutlass::current_device(device);
  if (rc == 0) rc = llmprof_cutlass::raise_smem_limit<Op>(device);
  if (rc != 0) return rc;
  const auto* base = static_cast<const Element*>(qkv);
  typename Mainloop::Arguments mainloop{};
  if (!Mainloop::encode(&mainloop.tma_q, base, batch, h, w, heads, llmprof_samw::kQueryRows) ||
      !Mainloop::encode(&mainloop.tma_kv, base, batch, h, w, heads, llmprof_samw::kKeyRows)) {
    return -(int)cutlass::Status::kErrorInvalidProblem;
  }
  mainloop.win = {static_cast<const Element*>(prod), prod_cols, (int64_t)batch * h * w, h, w,
                  nwx, nwy, heads, 0, 0};
  cutlass::KernelHardwareInfo hw{};
  hw.device_id = device;
  hw.sm_count = llmprof_cutlass::sm_count(device);
  if (hw.sm_count <= 0) return (int)cudaErrorInvalidDevice;
  typename Op::Arguments args{
      {batch * nwx * nwy, heads, llmprof_samw::kSeqQ, llmprof_samw::kSeqK, llmprof_samw::kHeadDim},
      mainloop,
      {static_cast<Element*>(out), mainloop.win},
      hw};
  return llmprof_cutlass::run<Op>(args, nullptr, stream);
}

}  // namespace

extern "C" int llmprof_k_sm90_sam_window_fmha(const void* qkv, const void* prod, int64_t prod_cols,
                                              void* out, int64_t batch, int64_t h, int64_t w,
                                              int64_t heads, void* stream) {
  const int64_t side = llmprof_samw::kWin;
  const int64_t windows = batch * ((h + side - 1) / side) * ((w + side - 1) / side);
  // The persistent scheduler counts tiles (two per window and head) in an int.
  if (batch < 1 || h < 1 || w < 1 || heads < 1 || 2 * windows * heads > INT32_MAX ||
      prod_cols < 4 * side - 2 || prod_cols > INT32_MAX || batch * h * w > INT32_MAX) {
    return (int)cudaErrorInvalidValue;
  }
  return launch(qkv, prod, prod_cols, out, (int)batch, (int)h, (int)w, (int)heads,
                static_cast<cudaStream_t>(stream));
}
