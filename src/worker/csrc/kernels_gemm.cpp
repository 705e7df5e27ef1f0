// Tensor-checking wrappers over llmprof's Hopper kernels (csrc/kernels/sm90a, CUTLASS): the
// Linear + erf-form GELU of SAM's MLP, and SAM's global and windowed attention with the
// relative-position bias inside. Built without them (no nvcc or no CUTLASS headers:
// LLMPROF_HAVE_SM90A_GEMM undefined; no CUTLASS FMHA example: LLMPROF_HAVE_SM90A_FMHA undefined),
// llmprof_linear_gelu_on_device /
// llmprof_sam_global_attention_on_device say 0 and the entry points fail with a message saying
// how to get them.
#include "kernel_args.h"
#include "shim.h"
#include "shim_guard.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <cstdint>

using namespace llmprof_kargs;

#ifdef LLMPROF_HAVE_SM90A_FMHA
namespace {

// The operands beside a SAM attention kernel's qkv [batch, h, w, 3·heads·64] (checked by the
// caller): prod [heads, batch·h·w, cols] with at least `min_cols` columns (both axes' relative
// offsets) and out [batch, h, w, heads·64]; qkv and out 16-byte aligned (TMA).
struct ProdOut {
  const at::Tensor& prod;
  const at::Tensor& out;
  int64_t cols;
};

ProdOut check_prod_and_out(const at::Tensor& qkv, const void* prod_p, const void* out_p,
                           int64_t heads, int64_t min_cols) {
  const int64_t batch = qkv.size(0), h = qkv.size(1), w = qkv.size(2);
  const auto& prod = tensor_arg(prod_p, "prod");
  TORCH_CHECK(prod.dim() == 3, "prod must be [heads, batch·h·w, cols], got ", prod.sizes());
  const int64_t cols = prod.size(2);
  check_like(prod, qkv, "prod", {heads, batch * h * w, cols});
  TORCH_CHECK(cols >= min_cols, "prod has ", cols, " columns, fewer than the ", min_cols,
              " relative offsets of both axes");
  const auto& out = tensor_arg(out_p, "out");
  check_like(out, qkv, "out", {batch, h, w, heads * 64});
  check_aligned16(qkv, "qkv");
  check_aligned16(out, "out");
  return {prod, out, cols};
}

}  // namespace
#endif

extern "C" {

int llmprof_linear_gelu_on_device(int64_t device) {
#ifndef LLMPROF_HAVE_SM90A_GEMM
  (void)device;
  return 0;
#else
  int answer = -1;
  const int rc = llmprof::guarded("linear_gelu_on_device", [&] {
    TORCH_CHECK(device >= 0 && device < at::cuda::device_count(), "no CUDA device ", device);
    const auto* prop = at::cuda::getDeviceProperties((c10::DeviceIndex)device);
    answer = prop->major == 9 && prop->minor == 0 ? 1 : 0;
  });
  return rc == 0 ? answer : -1;
#endif
}

int llmprof_linear_gelu(const void* x_p, const void* w_p, const void* b_p, const void* out_p,
                        int variant) {
  return llmprof::guarded("linear_gelu", [&] {
#ifndef LLMPROF_HAVE_SM90A_GEMM
    TORCH_CHECK(false,
                "this llmprof-worker was built without llmprof's Hopper GEMMs (no nvcc or no "
                "CUTLASS headers at build time); run ./bootstrap.sh --yes and rebuild, or set "
                "model.optim.sam_gelu_epilogue=false (SAM) or model.optim.clip_gelu_epilogue=false "
                "(CLIP)");
#else
    const auto& x = tensor_arg(x_p, "x");
    const int64_t k = check_rows(x, "x");
    TORCH_CHECK(x.scalar_type() == at::kBFloat16, "x is ", x.scalar_type(), ", not bfloat16");
    const auto& w = tensor_arg(w_p, "w");
    TORCH_CHECK(w.dim() == 2 && w.size(1) == k, "w must be [n, ", k, "], got ", w.sizes());
    const int64_t n = w.size(0);
    check_like(w, x, "w", {n, k});
    const auto& b = tensor_arg(b_p, "b");
    check_like(b, x, "b", {n});
    const auto& out = tensor_arg(out_p, "out");
    auto out_sizes = x.sizes().vec();
    out_sizes.back() = n;
    check_like(out, x, "out", out_sizes);
    TORCH_CHECK(n % 8 == 0 && k % 8 == 0, "n (", n, ") and k (", k,
                ") must be multiples of 8 (16-byte rows for TMA)");
    const int64_t m = x.numel() / k;
    TORCH_CHECK(m < INT32_MAX && n < INT32_MAX && k < INT32_MAX, "sizes ", m, "x", n, "x", k,
                " exceed the GEMM's 32-bit sizes");
    check_aligned16(x, "x");
    check_aligned16(w, "w");
    check_aligned16(b, "b");
    check_aligned16(out, "out");
    c10::cuda::CUDAGuard guard(x.device());
    TORCH_CHECK(llmprof_linear_gelu_on_device(x.device().index()) == 1, "linear_gelu needs a "
                "compute capability 9.0 GPU (H100/H200), got ", x.device());
    const int64_t ws_bytes = llmprof_k_sm90_linear_gelu_workspace(m, n, k, variant);
    TORCH_CHECK(ws_bytes >= 0, "linear_gelu: no variant ", variant);
    at::Tensor ws;
    if (ws_bytes > 0) ws = at::empty({ws_bytes}, x.options().dtype(at::kByte));
    const int rc = llmprof_k_sm90_linear_gelu(x.data_ptr(), w.data_ptr(), b.data_ptr(),
                                              out.data_ptr(), m, n, k,
                                              ws_bytes > 0 ? ws.data_ptr() : nullptr,
                                              c10::cuda::getCurrentCUDAStream().stream(),
                                              variant);
    TORCH_CHECK(rc >= 0, "linear_gelu: CUTLASS refused ", m, "x", n, "x", k, ": ",
                llmprof_k_sm90_status_string(-rc));
    check_launch(rc, "linear_gelu");
#endif
  });
}

int llmprof_sam_global_attention_on_device(int64_t device) {
#ifndef LLMPROF_HAVE_SM90A_FMHA
  (void)device;
  return 0;
#else
  return llmprof_linear_gelu_on_device(device);
#endif
}

int llmprof_sam_global_attention(const void* qkv_p, const void* prod_p, const void* out_p) {
  return llmprof::guarded("sam_global_attention", [&] {
#ifndef LLMPROF_HAVE_SM90A_FMHA
    TORCH_CHECK(false,
                "this llmprof-worker was built without SAM's Hopper global attention (no nvcc, or "
                "no CUTLASS headers with examples/88_hopper_fmha, at build time); run "
                "./bootstrap.sh --yes and rebuild, or set "
                "model.optim.sam_global_attention_kernel=false");
#else
    const auto& qkv = tensor_arg(qkv_p, "qkv");
    check_first(qkv, "qkv", 4, "[batch, grid, grid, 3·heads·64]", at::kBFloat16);
    const int64_t batch = qkv.size(0), grid = qkv.size(1), c3 = qkv.size(3);
    TORCH_CHECK(qkv.size(2) == grid && c3 % (3 * 64) == 0,
                "qkv must be [batch, grid, grid, 3·heads·64] (a square grid, heads of 64), got ",
                qkv.sizes());
    TORCH_CHECK(llmprof_k_sm90_sam_global_attention_fits(grid, 64) == 1,
                "sam_global_attention takes grids of 32, 40, 64 or 80 tokens a side, got ", grid);
    const int64_t heads = c3 / (3 * 64);
    const auto [prod, out, cols] = check_prod_and_out(qkv, prod_p, out_p, heads, 4 * grid - 2);
    TORCH_CHECK(batch <= 65535 && heads <= 65535 && qkv.numel() <= INT32_MAX,
                "sam_global_attention takes at most 65535 views and 2^31 - 1 elements of qkv "
                "(the kernel's 32-bit strides), got ", qkv.sizes(), "; lower "
                "model.optim.vision_max_views");
    c10::cuda::CUDAGuard guard(qkv.device());
    TORCH_CHECK(llmprof_sam_global_attention_on_device(qkv.device().index()) == 1,
                "sam_global_attention needs a compute capability 9.0 GPU (H100/H200), got ",
                qkv.device());
    const auto lse = at::empty({batch, heads, grid * grid}, qkv.options().dtype(at::kFloat));
    const int rc = llmprof_k_sm90_sam_global_attention(
        qkv.data_ptr(), prod.data_ptr(), cols, out.data_ptr(), lse.data_ptr(), batch, grid, heads,
        c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(rc >= 0, "sam_global_attention: CUTLASS failed for batch ", batch, ", grid ",
                grid, ", heads ", heads, ": ", llmprof_k_sm90_status_string(-rc));
    check_launch(rc, "sam_global_attention");
#endif
  });
}

int llmprof_sam_window_fmha(const void* qkv_p, const void* prod_p, const void* out_p) {
  return llmprof::guarded("sam_window_fmha", [&] {
#ifndef LLMPROF_HAVE_SM90A_FMHA
    TORCH_CHECK(false,
                "this llmprof-worker was built without SAM's Hopper windowed attention (no nvcc, "
                "or no CUTLASS headers with examples/88_hopper_fmha, at build time); run "
                "./bootstrap.sh --yes and rebuild, or set "
                "model.optim.sam_window_fmha_kernel=false");
#else
    const auto& qkv = tensor_arg(qkv_p, "qkv");
    check_first(qkv, "qkv", 4, "[batch, h, w, 3·heads·64]", at::kBFloat16);
    const int64_t batch = qkv.size(0), h = qkv.size(1), w = qkv.size(2), c3 = qkv.size(3);
    TORCH_CHECK(c3 % (3 * 64) == 0 && c3 > 0,
                "qkv must be [batch, h, w, 3·heads·64] (heads of 64), got ", qkv.sizes());
    const int64_t heads = c3 / (3 * 64);
    // 2·14 − 1 offsets of each axis of a 14×14 window.
    const auto [prod, out, cols] = check_prod_and_out(qkv, prod_p, out_p, heads, 4 * 14 - 2);
    const int64_t windows = batch * ((h + 13) / 14) * ((w + 13) / 14);
    TORCH_CHECK(2 * windows * heads <= INT32_MAX && batch * h * w <= INT32_MAX,
                "sam_window_fmha takes at most 2^31 - 1 tiles (two per 14x14 window and head) and "
                "tokens, got ", qkv.sizes(), "; lower model.optim.vision_max_views or set "
                "model.optim.sam_window_fmha_kernel=false");
    c10::cuda::CUDAGuard guard(qkv.device());
    TORCH_CHECK(llmprof_sam_global_attention_on_device(qkv.device().index()) == 1,
                "sam_window_fmha needs a compute capability 9.0 GPU (H100/H200), got ",
                qkv.device(), "; set model.optim.sam_window_fmha_kernel=false");
    const int rc = llmprof_k_sm90_sam_window_fmha(qkv.data_ptr(), prod.data_ptr(), cols,
                                                  out.data_ptr(), batch, h, w, heads,
                                                  c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(rc >= 0, "sam_window_fmha: CUTLASS failed for qkv ", qkv.sizes(), ": ",
                llmprof_k_sm90_status_string(-rc),
                "; set model.optim.sam_window_fmha_kernel=false to use the folded path");
    check_launch(rc, "sam_window_fmha");
#endif
  });
}

}  // extern "C"
