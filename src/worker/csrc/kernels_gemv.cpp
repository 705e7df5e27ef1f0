// Tensor-checking wrappers over llmprof's GEMV (csrc/kernels/gemv.cu; ffi/kernels_gemv.rs): a
// Linear over a decode step's few rows, its grouped form over a MoE step's token slots, and the
// one-row form with the residual add + RMSNorm before it folded in. Built without nvcc
// (LLMPROF_HAVE_KERNELS undefined), every entry point fails with a message saying how to get the
// kernels.
#include "kernel_args.h"
#include "shim.h"
#include "shim_guard.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <cstdint>

using namespace llmprof_kargs;

#ifdef LLMPROF_HAVE_KERNELS
namespace {

// A GEMV's x: a contiguous CUDA bf16 or fp16 tensor [.., k], k a positive multiple of 8 → k.
int64_t gemv_x_width(const at::Tensor& x, const char* kernel) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.dim() >= 1,
              "x must be a contiguous CUDA tensor [.., k], got ", x.sizes(), " on ", x.device());
  TORCH_CHECK(x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf, kernel,
              " takes bf16 or fp16, got ", x.scalar_type());
  const int64_t k = x.size(-1);
  TORCH_CHECK(k > 0 && k % 8 == 0, kernel, " takes a width that is a positive multiple of 8, got ",
              k);
  return k;
}

// A one-weight GEMV's other operands, checked against x [.., k]: weight [n, k], bias [n] (or
// none: null), y [.., n], or with `swiglu` (n even: a fused [gate; up] weight) [.., n / 2]; x and
// weight 16-byte aligned.
struct GemvOperands {
  int64_t n;
  const at::Tensor* bias;
  const at::Tensor* y;
};

GemvOperands gemv_operands(const at::Tensor& x, int64_t k, const at::Tensor& w,
                           const void* bias_p, const void* y_p, bool swiglu) {
  TORCH_CHECK(w.dim() == 2, "weight must be [n, k], got ", w.sizes());
  const int64_t n = w.size(0);
  check_like(w, x, "weight", {n, k});
  TORCH_CHECK(!swiglu || n % 2 == 0, "a fused gate/up weight has an even number of rows, got ", n);
  TORCH_CHECK(!swiglu || bias_p == nullptr, "the GEMV with SwiGLU takes no bias");
  const at::Tensor* bias = nullptr;
  if (bias_p != nullptr) {
    bias = &tensor_arg(bias_p, "bias");
    check_like(*bias, x, "bias", {n});
  }
  auto sizes = x.sizes().vec();
  sizes.back() = swiglu ? n / 2 : n;
  const auto& y = tensor_arg(y_p, "y");
  check_like(y, x, "y", sizes);
  check_aligned16(x, "x");
  check_aligned16(w, "weight");
  return {n, bias, &y};
}

}  // namespace
#endif

extern "C" {

int llmprof_gemv(const void* x_p, const void* w_p, const void* bias_p, const void* y_p,
                 int swiglu) {
  return llmprof::guarded("gemv", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& x = tensor_arg(x_p, "x");
    const int64_t k = gemv_x_width(x, "gemv"), m = x.numel() / k;
    TORCH_CHECK(m >= 1 && m <= LLMPROF_K_GEMV_MAX_ROWS, "gemv takes 1 to ",
                LLMPROF_K_GEMV_MAX_ROWS, " rows, got ", m);
    TORCH_CHECK(!swiglu || m == 1, "gemv with SwiGLU takes one row, got ", m);
    const auto& w = tensor_arg(w_p, "weight");
    const auto [n, bias, y] = gemv_operands(x, k, w, bias_p, y_p, swiglu != 0);
    c10::cuda::CUDAGuard guard(x.device());
    check_launch(llmprof_k_gemv(dtype_code(x), x.data_ptr(), w.data_ptr(),
                                bias ? bias->data_ptr() : nullptr, y->data_ptr(), (int)m, n, k,
                                swiglu, c10::cuda::getCurrentCUDAStream().stream()),
                 "gemv");
#endif
  });
}

int llmprof_gemv_grouped(const void* x_p, const void* w_p, const void* group_ends_p,
                         const void* y_p, int swiglu) {
  return llmprof::guarded("gemv_grouped", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& x = tensor_arg(x_p, "x");
    const auto& w = tensor_arg(w_p, "weight");
    const auto& ends = tensor_arg(group_ends_p, "group_ends");
    const int64_t k = gemv_x_width(x, "gemv_grouped");
    TORCH_CHECK(x.dim() == 2, "x must be [slots, k], got ", x.sizes());
    const int64_t slots = x.size(0);
    TORCH_CHECK(slots >= 1 && slots <= LLMPROF_K_GEMV_MAX_GROUPED_ROWS, "gemv_grouped takes 1 to ",
                LLMPROF_K_GEMV_MAX_GROUPED_ROWS, " slots, got ", slots);
    TORCH_CHECK(w.dim() == 3, "weight must be [experts, n, k], got ", w.sizes());
    const int64_t experts = w.size(0), n = w.size(1);
    check_like(w, x, "weight", {experts, n, k});
    TORCH_CHECK(experts <= INT32_MAX, "too many experts: ", experts);
    TORCH_CHECK(ends.is_cuda() && ends.device() == x.device() && ends.is_contiguous() &&
                    ends.scalar_type() == at::kInt && ends.sizes() == at::IntArrayRef{experts},
                "group_ends must be a contiguous int32 tensor [", experts, "] on ", x.device(),
                ", got ", ends.sizes(), " ", ends.scalar_type(), " on ", ends.device());
    TORCH_CHECK(!swiglu || n % 2 == 0, "a fused gate/up weight has an even number of rows, got ",
                n);
    const auto& y = tensor_arg(y_p, "y");
    check_like(y, x, "y", {slots, swiglu ? n / 2 : n});
    check_aligned16(x, "x");
    check_aligned16(w, "weight");
    c10::cuda::CUDAGuard guard(x.device());
    check_launch(llmprof_k_gemv_grouped(dtype_code(x), x.data_ptr(), w.data_ptr(),
                                        ends.data_ptr<int32_t>(), y.data_ptr(), (int)slots,
                                        (int)experts, n, k, swiglu,
                                        c10::cuda::getCurrentCUDAStream().stream()),
                 "gemv_grouped");
#endif
  });
}

int llmprof_gemv_add_rms_norm(const void* x_p, const void* delta_p, const void* norm_weight_p,
                              double eps, const void* w_p, const void* bias_p, const void* sum_p,
                              const void* y_p, int swiglu) {
  return llmprof::guarded("gemv_add_rms_norm", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& x = tensor_arg(x_p, "x");
    const int64_t k = gemv_x_width(x, "gemv_add_rms_norm");
    TORCH_CHECK(x.numel() == k, "gemv_add_rms_norm takes one row, got ", x.sizes());
    TORCH_CHECK(k <= LLMPROF_K_ADD_RMS_NORM_MAX_HIDDEN, "gemv_add_rms_norm takes a width up to ",
                LLMPROF_K_ADD_RMS_NORM_MAX_HIDDEN, ", got ", k);
    const auto& w = tensor_arg(w_p, "weight");
    const auto [n, bias, y] = gemv_operands(x, k, w, bias_p, y_p, swiglu != 0);
    const auto& delta = tensor_arg(delta_p, "delta");
    check_like(delta, x, "delta", x.sizes());
    const auto& norm_weight = tensor_arg(norm_weight_p, "norm_weight");
    check_like(norm_weight, x, "norm_weight", {k});
    const auto& sum = tensor_arg(sum_p, "sum");
    check_like(sum, x, "sum", x.sizes());
    check_aligned16(delta, "delta");
    check_aligned16(norm_weight, "norm_weight");
    check_aligned16(sum, "sum");
    c10::cuda::CUDAGuard guard(x.device());
    check_launch(llmprof_k_gemv_add_rms_norm(
                     dtype_code(x), x.data_ptr(), delta.data_ptr(), norm_weight.data_ptr(),
                     (float)eps, sum.data_ptr(), w.data_ptr(), bias ? bias->data_ptr() : nullptr,
                     y->data_ptr(), n, k, swiglu, c10::cuda::getCurrentCUDAStream().stream()),
                 "gemv_add_rms_norm");
#endif
  });
}

}  // extern "C"
