// Tensor-checking wrappers over llmprof's own CUDA kernels for the vision encoders: SAM's
// attention glue (sam_attention.cu), the residual add + LayerNorm (add_layer_norm.cu) and CLIP's
// quickGELU (quick_gelu.cu); the
// decoder's are in kernels.cpp, the shared argument checks in kernel_args.h. Built without nvcc
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
#include <initializer_list>

using namespace llmprof_kargs;

namespace {

#ifdef LLMPROF_HAVE_KERNELS
llmprof_k_sam_shape sam_shape(int64_t batch, int64_t grid_h, int64_t grid_w, int64_t heads,
                              int64_t head_dim, int64_t win_h, int64_t win_w) {
  TORCH_CHECK(win_h > 0 && win_w > 0, "window ", win_h, "x", win_w, " must be positive");
  llmprof_k_sam_shape s{};
  s.batch = batch;
  s.grid_h = grid_h;
  s.grid_w = grid_w;
  s.pad_h = (grid_h + win_h - 1) / win_h * win_h;
  s.pad_w = (grid_w + win_w - 1) / win_w * win_w;
  s.win_h = win_h;
  s.win_w = win_w;
  s.heads = heads;
  s.head_dim = head_dim;
  s.aug_dim = (head_dim + win_h + win_w + 7) / 8 * 8;
  return s;
}

// Whether a kernel may move 16-byte vectors: every element count in `counts` a multiple of a
// vector's elements and every tensor 16-byte aligned.
bool vec16_ok(const at::Tensor& like, std::initializer_list<int64_t> counts,
              std::initializer_list<const at::Tensor*> tensors) {
  const int64_t per = 16 / (int64_t)like.element_size();
  for (int64_t c : counts) {
    if (c % per != 0) return false;
  }
  for (const at::Tensor* t : tensors) {
    if (reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 != 0) return false;
  }
  return true;
}
#endif

}  // namespace

extern "C" {

int llmprof_sam_pack_qkv(const void* qkv_p, const void* bias_p, int64_t heads, int64_t win_h,
                         int64_t win_w, const void* q_aug_p, const void* k_aug_p, const void* v_p,
                         const void* q_rows_p, const void* q_cols_p, int keys_ready) {
  return llmprof::guarded("sam_pack_qkv", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& qkv = tensor_arg(qkv_p, "qkv");
    check_first(qkv, "qkv", 4, "[B,H,W,3C]");
    TORCH_CHECK(heads > 0, "heads must be positive, got ", heads);
    const int64_t c3 = qkv.size(3);
    TORCH_CHECK(c3 % (3 * heads) == 0, "qkv width ", c3, " is not 3 x ", heads, " heads");
    const int64_t head_dim = c3 / 3 / heads;
    auto s = sam_shape(qkv.size(0), qkv.size(1), qkv.size(2), heads, head_dim, win_h, win_w);
    check_like(tensor_arg(bias_p, "bias"), qkv, "bias", {c3});
    const int64_t windows = s.batch * (s.pad_h / win_h) * (s.pad_w / win_w);
    const int64_t tokens = win_h * win_w;
    const auto& q_aug = tensor_arg(q_aug_p, "q_aug");
    const auto& k_aug = tensor_arg(k_aug_p, "k_aug");
    const auto& v = tensor_arg(v_p, "v");
    TORCH_CHECK((q_rows_p == nullptr) == (q_cols_p == nullptr),
                "q_rows and q_cols are given together or not at all");
    check_like(q_aug, qkv, "q_aug", {windows, tokens, heads, s.aug_dim});
    check_like(k_aug, qkv, "k_aug", {windows, tokens, heads, s.aug_dim});
    check_like(v, qkv, "v", {windows, tokens, heads, head_dim});
    const at::Tensor* q_rows = nullptr;
    const at::Tensor* q_cols = nullptr;
    if (q_rows_p != nullptr) {
      q_rows = &tensor_arg(q_rows_p, "q_rows");
      q_cols = &tensor_arg(q_cols_p, "q_cols");
      check_like(*q_rows, qkv, "q_rows", {win_h, windows * heads, win_w, head_dim});
      check_like(*q_cols, qkv, "q_cols", {win_w, windows * heads, win_h, head_dim});
    }
    const auto& bias = tensor_arg(bias_p, "bias");
    const bool vec = vec16_ok(qkv, {head_dim, s.aug_dim}, {&qkv, &bias, &q_aug, &k_aug, &v}) &&
                     (q_rows == nullptr || vec16_ok(qkv, {}, {q_rows, q_cols}));
    c10::cuda::CUDAGuard guard(qkv.device());
    check_launch(llmprof_k_sam_pack_qkv(
                     dtype_code(qkv), qkv.data_ptr(), bias.data_ptr(), q_aug.data_ptr(),
                     k_aug.data_ptr(), v.data_ptr(), q_rows ? q_rows->data_ptr() : nullptr,
                     q_cols ? q_cols->data_ptr() : nullptr, s, keys_ready != 0 ? 1 : 0,
                     vec ? 1 : 0, c10::cuda::getCurrentCUDAStream().stream()),
                 "sam_pack_qkv");
#endif
  });
}

int llmprof_sam_fill_rel_pos(const void* prod_p, int64_t head_dim, int64_t win_h, int64_t win_w,
                             const void* q_aug_p) {
  return llmprof::guarded("sam_fill_rel_pos", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& q_aug = tensor_arg(q_aug_p, "q_aug");
    check_first(q_aug, "q_aug", 4, "[B*windows, tokens, heads, aug]");
    const auto& prod = tensor_arg(prod_p, "prod");
    TORCH_CHECK(head_dim > 0, "head_dim must be positive, got ", head_dim);
    auto s = sam_shape(1, win_h, win_w, q_aug.size(2), head_dim, win_h, win_w);
    TORCH_CHECK(q_aug.size(1) == win_h * win_w && q_aug.size(3) == s.aug_dim, "q_aug has shape ",
                q_aug.sizes(), ", expected [.., ", win_h * win_w, ", ", q_aug.size(2), ", ",
                s.aug_dim, "] for ", win_h, "x", win_w, " windows of head_dim ", head_dim);
    const int64_t rows = q_aug.size(0) * q_aug.size(1) * q_aug.size(2);
    TORCH_CHECK(prod.dim() == 2 && prod.size(0) == rows && prod.size(1) >= 2 * (win_h + win_w - 1),
                "prod must be [", rows, ", >= ", 2 * (win_h + win_w - 1), "], got ", prod.sizes());
    check_like(prod, q_aug, "prod", prod.sizes());
    const bool vec = vec16_ok(q_aug, {head_dim, s.aug_dim}, {&q_aug});
    c10::cuda::CUDAGuard guard(q_aug.device());
    check_launch(llmprof_k_sam_fill_rel_pos(dtype_code(q_aug), prod.data_ptr(), prod.size(1),
                                            q_aug.data_ptr(), rows, s, vec ? 1 : 0,
                                            c10::cuda::getCurrentCUDAStream().stream()),
                 "sam_fill_rel_pos");
#endif
  });
}

int llmprof_sam_merge_windows(const void* o_p, int64_t win_h, int64_t win_w, const void* out_p) {
  return llmprof::guarded("sam_merge_windows", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& o = tensor_arg(o_p, "o");
    const auto& out = tensor_arg(out_p, "out");
    TORCH_CHECK(o.is_cuda(), "o must be on a CUDA device, got ", o.device());
    TORCH_CHECK(o.dim() == 4, "o must be [B*windows, heads, tokens, head_dim], got ", o.sizes());
    TORCH_CHECK(out.dim() == 4, "out must be [B,H,W,C], got ", out.sizes());
    const int64_t heads = o.size(1), head_dim = o.size(3);
    auto s = sam_shape(out.size(0), out.size(1), out.size(2), heads, head_dim, win_h, win_w);
    const int64_t windows = s.batch * (s.pad_h / win_h) * (s.pad_w / win_w);
    TORCH_CHECK(o.size(0) == windows && o.size(2) == win_h * win_w, "o has shape ", o.sizes(),
                ", expected [", windows, ", ", heads, ", ", win_h * win_w, ", ", head_dim, "]");
    check_like(out, o, "out", {s.batch, s.grid_h, s.grid_w, heads * head_dim});
    const int64_t strides[4] = {o.stride(0), o.stride(1), o.stride(2), o.stride(3)};
    const bool vec = strides[3] == 1 &&
                     vec16_ok(o, {head_dim, strides[0], strides[1], strides[2]}, {&o, &out});
    c10::cuda::CUDAGuard guard(o.device());
    check_launch(llmprof_k_sam_merge_windows(dtype_code(o), o.data_ptr(), strides, out.data_ptr(),
                                             s, vec ? 1 : 0,
                                             c10::cuda::getCurrentCUDAStream().stream()),
                 "sam_merge_windows");
#endif
  });
}

int llmprof_sam_window_attention(const void* qkv_p, const void* bias_p, const void* prod_p,
                                 int64_t heads, int64_t win_h, int64_t win_w,
                                 const void* out_p) {
  return llmprof::guarded("sam_window_attention", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& qkv = tensor_arg(qkv_p, "qkv");
    check_first(qkv, "qkv", 4, "[B,H,W,3*heads*64]", at::kBFloat16);
    TORCH_CHECK(heads > 0 && qkv.size(3) == 3 * heads * 64, "qkv must be [B,H,W,3*heads*64] with "
                "heads ", heads, ", got ", qkv.sizes());
    const int64_t channels = heads * 64;
    auto s = sam_shape(qkv.size(0), qkv.size(1), qkv.size(2), heads, 64, win_h, win_w);
    TORCH_CHECK((win_h == 14 && win_w == 14) || (win_h == 4 && win_w == 4),
                "the windowed attention kernel takes windows of 14x14 (SAM's) or 4x4, got ", win_h,
                "x", win_w);
    const auto& bias = tensor_arg(bias_p, "bias");
    check_like(bias, qkv, "bias", {3 * channels});
    const auto& prod = tensor_arg(prod_p, "prod");
    TORCH_CHECK(prod.dim() == 3, "prod must be [heads, tokens, cols], got ", prod.sizes());
    const int64_t prod_cols = prod.size(2);
    check_like(prod, qkv, "prod", {heads, s.batch * s.grid_h * s.grid_w, prod_cols});
    TORCH_CHECK(prod_cols >= 2 * (win_h + win_w) - 2, "prod has ", prod_cols,
                " columns, fewer than the window's ", 2 * (win_h + win_w) - 2, " offsets");
    const auto& out = tensor_arg(out_p, "out");
    const int64_t windows = s.batch * (s.pad_h / win_h) * (s.pad_w / win_w);
    check_like(out, qkv, "out", {windows, win_h * win_w, channels});
    TORCH_CHECK(heads <= 65535, "the windowed attention kernel takes at most 65535 heads, got ",
                heads);
    check_aligned16(qkv, "qkv");
    check_aligned16(bias, "bias");
    check_aligned16(out, "out");
    c10::cuda::CUDAGuard guard(qkv.device());
    check_launch(llmprof_k_sam_window_attention(qkv.data_ptr(), bias.data_ptr(), prod.data_ptr(),
                                                prod_cols, out.data_ptr(), s,
                                                c10::cuda::getCurrentCUDAStream().stream()),
                 "sam_window_attention");
#endif
  });
}

int llmprof_add_layer_norm(const void* x_p, const void* delta_p, const void* weight_p,
                           const void* bias_p, double eps, int64_t delta_win_h,
                           int64_t delta_win_w, const void* sum_p, const void* out_p) {
  return llmprof::guarded("add_layer_norm", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& x = tensor_arg(x_p, "x");
    const int64_t hidden = check_rows(x, "x");
    const int64_t pass = 32 * (16 / (int64_t)x.element_size());
    TORCH_CHECK(hidden % pass == 0 && hidden / pass <= LLMPROF_K_ADD_LAYER_NORM_MAX_PASSES,
                "the add + LayerNorm kernel takes hidden sizes that are multiples of ", pass,
                " up to ", pass * LLMPROF_K_ADD_LAYER_NORM_MAX_PASSES, " for ", x.scalar_type(),
                ", got ", hidden);
    const auto& delta = tensor_arg(delta_p, "delta");
    const auto& weight = tensor_arg(weight_p, "weight");
    const auto& bias = tensor_arg(bias_p, "bias");
    const auto& sum = tensor_arg(sum_p, "sum");
    const auto& out = tensor_arg(out_p, "out");
    llmprof_k_window_rows delta_rows{0, 0, 0, 0};
    if (delta_win_h > 0 || delta_win_w > 0) {
      TORCH_CHECK(delta_win_h > 0 && delta_win_w > 0, "delta's window ", delta_win_h, "x",
                  delta_win_w, " must be positive");
      TORCH_CHECK(x.dim() == 4, "with a windowed delta, x must be [B,H,W,C], got ", x.sizes());
      delta_rows = {x.size(1), x.size(2), delta_win_h, delta_win_w};
      const int64_t windows = x.size(0) * ((x.size(1) + delta_win_h - 1) / delta_win_h) *
                              ((x.size(2) + delta_win_w - 1) / delta_win_w);
      check_like(delta, x, "delta", {windows, delta_win_h * delta_win_w, hidden});
    } else {
      check_like(delta, x, "delta", x.sizes());
    }
    check_like(weight, x, "weight", {hidden});
    check_like(bias, x, "bias", {hidden});
    check_like(sum, x, "sum", x.sizes());
    check_like(out, x, "out", x.sizes());
    check_aligned16(x, "x");
    check_aligned16(delta, "delta");
    check_aligned16(weight, "weight");
    check_aligned16(bias, "bias");
    check_aligned16(sum, "sum");
    check_aligned16(out, "out");
    c10::cuda::CUDAGuard guard(x.device());
    check_launch(llmprof_k_add_layer_norm(dtype_code(x), x.data_ptr(), delta.data_ptr(),
                                          weight.data_ptr(), bias.data_ptr(), sum.data_ptr(),
                                          out.data_ptr(), x.numel() / hidden, hidden, (float)eps,
                                          delta_rows, c10::cuda::getCurrentCUDAStream().stream()),
                 "add_layer_norm");
#endif
  });
}

int llmprof_sam_patches(const void* pixels_p, int64_t patch, const void* out_p) {
  return llmprof::guarded("sam_patches", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& px = tensor_arg(pixels_p, "pixels");
    TORCH_CHECK(px.is_cuda() && px.dim() == 4 && px.scalar_type() == at::kByte,
                "pixels must be uint8 [B,3,S,S] on a CUDA device, got ", px.scalar_type(), " ",
                px.sizes(), " on ", px.device());
    const int64_t b = px.size(0), side = px.size(2);
    TORCH_CHECK(px.size(1) == 3 && px.size(3) == side, "pixels must be [B,3,S,S], got ",
                px.sizes());
    TORCH_CHECK(patch > 0 && patch <= 1024 && side % patch == 0, "the side ", side,
                " is not a multiple of the patch ", patch);
    const int64_t g = side / patch;
    const auto& out = tensor_arg(out_p, "out");
    TORCH_CHECK(out.device() == px.device(), "out is on ", out.device(), ", not ", px.device());
    check_tensor(out, "out", px.device(), out.scalar_type(), {b, g, g, 3 * patch * patch});
    const int elem = (int)out.element_size();
    const bool vec = patch % (16 / elem) == 0 &&
                     reinterpret_cast<uintptr_t>(out.data_ptr()) % 16 == 0;
    const llmprof_k_pixel_strides st{px.stride(0), px.stride(1), px.stride(2), px.stride(3)};
    c10::cuda::CUDAGuard guard(px.device());
    check_launch(llmprof_k_sam_patches(dtype_code(out), px.data_ptr(), st, out.data_ptr(), b, side,
                                       (int)patch, vec ? 1 : 0,
                                       c10::cuda::getCurrentCUDAStream().stream()),
                 "sam_patches");
#endif
  });
}

int llmprof_quick_gelu(const void* x_p, const void* out_p) {
  return llmprof::guarded("quick_gelu", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& x = tensor_arg(x_p, "x");
    check_rows(x, "x");
    const auto& out = tensor_arg(out_p, "out");
    check_like(out, x, "out", x.sizes());
    c10::cuda::CUDAGuard guard(x.device());
    const bool vec = vec16_ok(x, {x.numel()}, {&x, &out});
    check_launch(llmprof_k_quick_gelu(dtype_code(x), x.data_ptr(), out.data_ptr(), x.numel(),
                                      vec ? 1 : 0, c10::cuda::getCurrentCUDAStream().stream()),
                 "quick_gelu");
#endif
  });
}

}  // extern "C"
