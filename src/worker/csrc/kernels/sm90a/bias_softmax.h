// The two softmax steps of CUTLASS's Hopper FMHA mainloop (example 88) with a bias added to the
// scores first, shared by llmprof's softmax specialisations (sam_global_attention.cu,
// sam_window_fmha_softmax.cuh). Derived provides load_rows(count_mn, problem_shape), called
// once per query tile before the first key tile's bias, and add_bias(acc_qk, tiled_mma_qk),
// called for every key tile; Base is the library's softmax for DefaultFusion.
#ifndef LLMPROF_SM90A_BIAS_SOFTMAX_H
#define LLMPROF_SM90A_BIAS_SOFTMAX_H

#include "88_hopper_fmha/collective/fmha_collective_softmax.hpp"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"

namespace llmprof_cutlass {

template <class Derived, class Base>
struct BiasedSoftmaxSteps : Base {
  template <class Params>
  CUTLASS_DEVICE explicit BiasedSoftmaxSteps(Params const& params) : Base(params) {}

  // The first key tile (the mainloop's five-argument step): load the rows, then the bias.
  template <class AccQK, class TiledMmaQK, class CountQK, class State, class ProblemShape>
  CUTLASS_DEVICE auto step(AccQK& acc_qk, TiledMmaQK const& tiled_mma_qk, CountQK const& count_qk,
                           State& state, ProblemShape const& problem_shape) {
    using cute::make_tensor;
    auto count_mn = make_tensor(
        count_qk.data(),
        cutlass::fmha::collective::layout_acc_mn(tiled_mma_qk, count_qk.layout()));
    derived().load_rows(count_mn, problem_shape);
    derived().add_bias(acc_qk, tiled_mma_qk);
    return Base::step(acc_qk, tiled_mma_qk, count_qk, state, problem_shape);
  }

  // Every later key tile of the warp-specialized kernel.
  template <bool kUseFusion = true, class AccQK, class TiledMmaQK, class CountQK, class State,
            class AccPV, class TiledMmaPV, class ProblemShape>
  CUTLASS_DEVICE auto step(AccQK& acc_qk, TiledMmaQK const& tiled_mma_qk, CountQK const& count_qk,
                           State& state, AccPV& acc_pv, TiledMmaPV const& tiled_mma_pv,
                           ProblemShape const& problem_shape) {
    derived().add_bias(acc_qk, tiled_mma_qk);
    return Base::template step<false>(acc_qk, tiled_mma_qk, count_qk, state, acc_pv, tiled_mma_pv,
                                      problem_shape);
  }

 private:
  CUTLASS_DEVICE Derived& derived() { return *static_cast<Derived*>(this); }
};

}  // namespace llmprof_cutlass

#endif  // LLMPROF_SM90A_BIAS_SOFTMAX_H
