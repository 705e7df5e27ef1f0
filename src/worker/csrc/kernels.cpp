// Tensor-checking wrappers over llmprof's own CUDA kernels for the decoder and decoding
// (csrc/kernels/*.cu, launch.h; the vision encoders' are in kernels_vision.cpp): they take
// libtorch tensors (tch passes at::Tensor*), check device, dtype, shape and layout
// (kernel_args.h), and launch on the current stream. Built without nvcc (LLMPROF_HAVE_KERNELS
// undefined), every entry point fails with a message saying how to get the kernels.
#include "kernel_args.h"
#include "shim.h"
#include "shim_guard.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

using namespace llmprof_kargs;

#ifdef LLMPROF_HAVE_KERNELS
namespace {

// A SwiGLU call's operands, checked: gate_up a contiguous CUDA tensor [.., 2f] (f ≥ 1), out
// [.., f] like it → (rows, f).
std::pair<int64_t, int64_t> silu_mul_shape(const at::Tensor& gate_up, const at::Tensor& out) {
  TORCH_CHECK(gate_up.is_cuda() && gate_up.is_contiguous() && gate_up.dim() >= 1,
              "gate_up must be a contiguous CUDA tensor [.., 2f], got ", gate_up.sizes(), " on ",
              gate_up.device());
  const int64_t width = gate_up.size(-1);
  TORCH_CHECK(width >= 2 && width % 2 == 0, "gate_up's last dim ", width, " is not 2f (f >= 1)");
  auto sizes = gate_up.sizes().vec();
  sizes.back() = width / 2;
  check_like(out, gate_up, "out", sizes);
  return {gate_up.numel() / width, width / 2};
}

}  // namespace
#endif

extern "C" {

int llmprof_kernels_available(void) {
#ifdef LLMPROF_HAVE_KERNELS
  return 1;
#else
  return 0;
#endif
}

// Programmatic dependent launch for the kernels (pdl.cuh); nothing where this build has none.
void llmprof_set_programmatic_launch(int on) {
#ifdef LLMPROF_HAVE_KERNELS
  llmprof_k_set_programmatic_launch(on);
#else
  (void)on;
#endif
}

int llmprof_moe_route(const void* logits_p, const void* x_p, int64_t k, int64_t shared,
                      double scaling,
                      const void* weights_p, const void* ids_p, const void* order_p,
                      const void* slot_token_p, const void* slot_pos_p, const void* group_ends_p,
                      const void* sorted_x_p) {
  return llmprof::guarded("moe_route", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& logits = tensor_arg(logits_p, "logits");
    check_first(logits, "logits", 2, "[tokens, experts]", at::kFloat);
    const int64_t tokens = logits.size(0), experts = logits.size(1);
    TORCH_CHECK(experts >= 1 && experts <= LLMPROF_K_MOE_MAX_EXPERTS, experts,
                " experts: the router takes 1..", LLMPROF_K_MOE_MAX_EXPERTS);
    TORCH_CHECK(k >= 1 && k <= experts, "top-k ", k, " with ", experts, " experts");
    TORCH_CHECK(tokens >= 1 && tokens * k <= INT32_MAX, tokens, " tokens x top-", k,
                ": the router takes 1 token to 2^31 - 1 slots");
    TORCH_CHECK(shared >= 0 && experts + shared <= LLMPROF_K_MOE_MAX_EXPERTS, shared,
                " shared experts beside ", experts, " routed: the router takes ",
                LLMPROF_K_MOE_MAX_EXPERTS, " in all");
    TORCH_CHECK(shared == 0 || tokens * (k + shared) <= LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS,
                "shared experts as slots are routed in one block: at most ",
                LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS, " slots, got ", tokens, " x ", k + shared);
    const int64_t slots_per_token = k + shared;
    auto check_out = [&](const void* p, const char* name, at::ScalarType dtype,
                         at::IntArrayRef sizes) -> const at::Tensor& {
      const auto& t = tensor_arg(p, name);
      check_tensor(t, name, logits.device(), dtype, sizes);
      return t;
    };
    const auto& weights = check_out(weights_p, "weights", at::kFloat, {tokens, slots_per_token});
    const auto& ids = check_out(ids_p, "ids", at::kLong, {tokens, slots_per_token});
    const auto& order = check_out(order_p, "order", at::kLong, {tokens * slots_per_token});
    const auto& slot_token = check_out(slot_token_p, "slot_token", at::kLong, {tokens * slots_per_token});
    const auto& slot_pos = check_out(slot_pos_p, "slot_pos", at::kLong, {tokens * slots_per_token});
    const auto& group_ends = check_out(group_ends_p, "group_ends", at::kInt, {experts + shared});
    const auto& x = tensor_arg(x_p, "x");
    check_first(x, "x", 2, "[tokens, hidden]");
    TORCH_CHECK(x.size(0) == tokens, "x has ", x.size(0), " rows for ", tokens, " tokens");
    check_tensor(x, "x", logits.device(), x.scalar_type(), x.sizes());
    const auto& sorted_x = tensor_arg(sorted_x_p, "sorted_x");
    check_like(sorted_x, x, "sorted_x", {tokens * slots_per_token, x.size(1)});
    c10::cuda::CUDAGuard guard(logits.device());
    auto stream = c10::cuda::getCurrentCUDAStream().stream();
    // The one block also gathers the expert GEMMs' input rows for a few tokens; for more, its one
    // SM copies them slower than an index_select does (per decode step on an H100: batch 32
    // +4 %, batch 8 +1.5 %; batch 1 -2 %).
    const bool gather_in_kernel = tokens <= LLMPROF_K_MOE_GATHER_MAX_TOKENS;
    if (tokens * slots_per_token <= LLMPROF_K_MOE_ONE_BLOCK_MAX_SLOTS) {  // decode: one launch
      check_launch(llmprof_k_moe_route_one_block(
                       logits.data_ptr<float>(), tokens, (int)experts, (int)k, (int)shared,
                       (float)scaling, weights.data_ptr<float>(), ids.data_ptr<int64_t>(),
                       order.data_ptr<int64_t>(), slot_token.data_ptr<int64_t>(),
                       slot_pos.data_ptr<int64_t>(), group_ends.data_ptr<int32_t>(),
                       gather_in_kernel ? x.data_ptr() : nullptr,
                       x.size(1) * (int64_t)x.element_size(), sorted_x.data_ptr(), stream),
                   "moe_route");
    } else {  // a prefill: many blocks
      auto scratch = at::empty({llmprof_k_moe_route_scratch(tokens, (int)experts)},
                               logits.options().dtype(at::kInt));
      check_launch(llmprof_k_moe_route_many(
                       logits.data_ptr<float>(), tokens, (int)experts, (int)k, (float)scaling,
                       weights.data_ptr<float>(), ids.data_ptr<int64_t>(),
                       order.data_ptr<int64_t>(), slot_token.data_ptr<int64_t>(),
                       slot_pos.data_ptr<int64_t>(), group_ends.data_ptr<int32_t>(),
                       scratch.data_ptr<int32_t>(), stream),
                   "moe_route");
    }
    if (!gather_in_kernel) {
      auto out = sorted_x;  // the caller's tensor, written in place
      at::index_select_out(out, x, 0, slot_token);
    }
#endif
  });
}

int llmprof_ngram_ban(const void* logits_p, const void* recent_p, int64_t n,
                      const void* bannable_p) {
  return llmprof::guarded("ngram_ban", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& logits = tensor_arg(logits_p, "logits");
    const auto& recent = tensor_arg(recent_p, "recent");
    check_first(logits, "logits", 2, "[rows, vocab]", at::kFloat);
    TORCH_CHECK(recent.dim() == 2, "recent must be [", logits.size(0), ", window], got ",
                recent.sizes());
    check_tensor(recent, "recent", logits.device(), at::kLong, {logits.size(0), recent.size(1)});
    const bool* bannable = nullptr;
    if (bannable_p != nullptr) {
      const auto& b = tensor_arg(bannable_p, "bannable");
      check_tensor(b, "bannable", logits.device(), at::kBool, {logits.size(1)});
      bannable = b.data_ptr<bool>();
    }
    c10::cuda::CUDAGuard guard(logits.device());
    check_launch(llmprof_k_ngram_ban(logits.data_ptr<float>(), logits.size(0), logits.size(1),
                                     recent.data_ptr<int64_t>(), (int)recent.size(1), (int)n,
                                     bannable, c10::cuda::getCurrentCUDAStream().stream()),
                 "ngram_ban");
#endif
  });
}

int llmprof_argmax(const void* logits_p, const void* scratch_p, const void* out_p) {
  return llmprof::guarded("argmax", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& logits = tensor_arg(logits_p, "logits");
    check_first(logits, "logits", 2, "[rows, vocab]", at::kFloat);
    const int64_t rows = logits.size(0);
    const auto& scratch = tensor_arg(scratch_p, "scratch");
    check_tensor(scratch, "scratch", logits.device(), at::kLong, {2 * rows});
    const auto& out = tensor_arg(out_p, "out");
    check_tensor(out, "out", logits.device(), at::kLong, {rows});
    c10::cuda::CUDAGuard guard(logits.device());
    auto* words = reinterpret_cast<unsigned long long*>(scratch.data_ptr<int64_t>());
    check_launch(llmprof_k_argmax(logits.data_ptr<float>(), rows, logits.size(1), words,
                                  reinterpret_cast<unsigned int*>(words + rows),
                                  out.data_ptr<int64_t>(),
                                  c10::cuda::getCurrentCUDAStream().stream()),
                 "argmax");
#endif
  });
}

int llmprof_ngram_push(const void* recent_p, const void* next_p) {
  return llmprof::guarded("ngram_push", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& recent = tensor_arg(recent_p, "recent");
    const auto& next = tensor_arg(next_p, "next");
    check_first(recent, "recent", 2, "[rows, window]", at::kLong);
    check_tensor(next, "next", recent.device(), at::kLong, {recent.size(0)});
    TORCH_CHECK(recent.size(1) <= LLMPROF_K_NGRAM_MAX_WINDOW, "an n-gram window of ",
                recent.size(1), " ids exceeds the kernel's ", LLMPROF_K_NGRAM_MAX_WINDOW);
    c10::cuda::CUDAGuard guard(recent.device());
    check_launch(llmprof_k_ngram_push(recent.data_ptr<int64_t>(), recent.size(0),
                                      (int)recent.size(1), next.data_ptr<int64_t>(),
                                      c10::cuda::getCurrentCUDAStream().stream()),
                 "ngram_push");
#endif
  });
}

int llmprof_moe_combine(const void* sorted_p, const void* slot_pos_p, const void* weights_p,
                        const void* shared_p, const void* y_p) {
  return llmprof::guarded("moe_combine", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& weights = tensor_arg(weights_p, "weights");
    check_first(weights, "weights", 2, "[tokens, k]", at::kFloat);
    const int64_t tokens = weights.size(0), k = weights.size(1);
    TORCH_CHECK(k >= 1 && k <= LLMPROF_K_MOE_COMBINE_MAX_K && tokens >= 1 &&
                    tokens <= LLMPROF_K_MAX_GRID_Y,
                tokens, " tokens x top-", k, ": the combine kernel takes 1..", LLMPROF_K_MAX_GRID_Y,
                " tokens and top-1..", LLMPROF_K_MOE_COMBINE_MAX_K);
    const auto& y = tensor_arg(y_p, "y");
    check_first(y, "y", 2, "[tokens, hidden]");
    const int64_t hidden = y.size(1);
    check_tensor(y, "y", weights.device(), y.scalar_type(), {tokens, hidden});
    check_like(tensor_arg(sorted_p, "sorted"), y, "sorted", {tokens * k, hidden});
    const auto& slot_pos = tensor_arg(slot_pos_p, "slot_pos");
    check_tensor(slot_pos, "slot_pos", weights.device(), at::kLong, {tokens * k});
    const void* shared = nullptr;
    if (shared_p != nullptr) {
      const auto& t = tensor_arg(shared_p, "shared");
      check_like(t, y, "shared", {tokens, hidden});
      shared = t.data_ptr();
    }
    c10::cuda::CUDAGuard guard(y.device());
    check_launch(llmprof_k_moe_combine(dtype_code(y), tensor_arg(sorted_p, "sorted").data_ptr(),
                                       slot_pos.data_ptr<int64_t>(), weights.data_ptr<float>(),
                                       shared, y.data_ptr(), tokens, hidden, (int)k,
                                       c10::cuda::getCurrentCUDAStream().stream()),
                 "moe_combine");
#endif
  });
}

int llmprof_rope_kv(const void* qkv_p, const void* cos_p, const void* sin_p, const void* slot_p,
                    int64_t heads, int64_t kv_heads, int32_t fused_add, const void* q_p,
                    const void* k_cache_p, const void* v_cache_p) {
  return llmprof::guarded("rope_kv", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& qkv = tensor_arg(qkv_p, "qkv");
    check_first(qkv, "qkv", 3, "[B, T, (heads + 2 kv_heads) head_dim]");
    TORCH_CHECK(heads > 0 && kv_heads > 0 && heads % kv_heads == 0, heads, " heads and ", kv_heads,
                " kv heads: heads must be a positive multiple of kv heads");
    const int64_t batch = qkv.size(0), tokens = qkv.size(1), width = qkv.size(2);
    TORCH_CHECK(batch >= 1 && tokens >= 1, "qkv must hold at least one token, got ", qkv.sizes());
    TORCH_CHECK(batch * tokens <= LLMPROF_K_MAX_GRID_Y, "rope_kv takes at most ",
                LLMPROF_K_MAX_GRID_Y, " tokens per call (batch x tokens), got ", qkv.sizes());
    TORCH_CHECK(width % (heads + 2 * kv_heads) == 0, "qkv width ", width, " is not (", heads,
                " + 2 x ", kv_heads, ") heads");
    const int64_t hd = width / (heads + 2 * kv_heads);
    TORCH_CHECK(hd % 2 == 0, "head_dim ", hd, " must be even for rotate-half RoPE");
    check_like(tensor_arg(cos_p, "cos"), qkv, "cos", {batch, 1, tokens, hd});
    check_like(tensor_arg(sin_p, "sin"), qkv, "sin", {batch, 1, tokens, hd});
    check_like(tensor_arg(q_p, "q"), qkv, "q", {batch, tokens, heads, hd});
    const auto& k_cache = tensor_arg(k_cache_p, "k_cache");
    TORCH_CHECK(k_cache.dim() == 4, "k_cache must be [B, kv_heads, slots, head_dim], got ",
                k_cache.sizes());
    const int64_t slots = k_cache.size(2);
    TORCH_CHECK(slots >= 1, "k_cache has no slots, got ", k_cache.sizes());
    check_like(k_cache, qkv, "k_cache", {batch, kv_heads, slots, hd});
    check_like(tensor_arg(v_cache_p, "v_cache"), qkv, "v_cache", {batch, kv_heads, slots, hd});
    const auto& slot = tensor_arg(slot_p, "slot");
    check_tensor(slot, "slot", qkv.device(), at::kLong, {1});
    llmprof_k_rope_kv_shape s{};
    s.batch = (int)batch;
    s.tokens = (int)tokens;
    s.heads = (int)heads;
    s.kv_heads = (int)kv_heads;
    s.head_dim = (int)hd;
    s.slots = slots;
    s.fused_add = fused_add != 0;
    c10::cuda::CUDAGuard guard(qkv.device());
    check_launch(llmprof_k_rope_kv(dtype_code(qkv), qkv.data_ptr(),
                                   tensor_arg(cos_p, "cos").data_ptr(),
                                   tensor_arg(sin_p, "sin").data_ptr(), slot.data_ptr<int64_t>(),
                                   tensor_arg(q_p, "q").data_ptr(), k_cache.data_ptr(),
                                   tensor_arg(v_cache_p, "v_cache").data_ptr(), s,
                                   c10::cuda::getCurrentCUDAStream().stream()),
                 "rope_kv");
#endif
  });
}

int llmprof_silu_mul(const void* gate_up_p, const void* out_p) {
  return llmprof::guarded("silu_mul", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& gate_up = tensor_arg(gate_up_p, "gate_up");
    const auto& out = tensor_arg(out_p, "out");
    const auto [rows, f] = silu_mul_shape(gate_up, out);
    c10::cuda::CUDAGuard guard(gate_up.device());
    check_launch(llmprof_k_silu_mul(dtype_code(gate_up), gate_up.data_ptr(), out.data_ptr(), rows,
                                    f, c10::cuda::getCurrentCUDAStream().stream()),
                 "silu_mul");
#endif
  });
}

int llmprof_silu_mul_uses_vectors(const void* gate_up_p, const void* out_p, int* vectors) {
  return llmprof::guarded("silu_mul_uses_vectors", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& gate_up = tensor_arg(gate_up_p, "gate_up");
    const auto& out = tensor_arg(out_p, "out");
    const auto [rows, f] = silu_mul_shape(gate_up, out);
    check_launch(llmprof_k_silu_mul_uses_vectors(dtype_code(gate_up), gate_up.data_ptr(),
                                                 out.data_ptr(), rows, f, vectors),
                 "silu_mul_uses_vectors");
#endif
  });
}

int llmprof_add_rms_norm(const void* x_p, const void* delta_p, const void* weight_p, double eps,
                         const void* sum_p, const void* out_p) {
  return llmprof::guarded("add_rms_norm", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& x = tensor_arg(x_p, "x");
    const int64_t hidden = check_rows(x, "x");
    TORCH_CHECK(hidden <= LLMPROF_K_ADD_RMS_NORM_MAX_HIDDEN, "hidden size ", hidden,
                " exceeds the add + RMSNorm kernel's ", LLMPROF_K_ADD_RMS_NORM_MAX_HIDDEN);
    check_like(tensor_arg(delta_p, "delta"), x, "delta", x.sizes());
    check_like(tensor_arg(weight_p, "weight"), x, "weight", {hidden});
    check_like(tensor_arg(sum_p, "sum"), x, "sum", x.sizes());
    check_like(tensor_arg(out_p, "out"), x, "out", x.sizes());
    c10::cuda::CUDAGuard guard(x.device());
    check_launch(llmprof_k_add_rms_norm(dtype_code(x), x.data_ptr(),
                                        tensor_arg(delta_p, "delta").data_ptr(),
                                        tensor_arg(weight_p, "weight").data_ptr(),
                                        tensor_arg(sum_p, "sum").data_ptr(),
                                        tensor_arg(out_p, "out").data_ptr(), x.numel() / hidden,
                                        hidden, (float)eps,
                                        c10::cuda::getCurrentCUDAStream().stream()),
                 "add_rms_norm");
#endif
  });
}

int llmprof_router_logits(const void* x_p, const void* w_p, const void* logits_p) {
  return llmprof::guarded("router_logits", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& x = tensor_arg(x_p, "x");
    check_first(x, "x", 2, "[tokens, hidden]");
    const auto& w = tensor_arg(w_p, "w");
    TORCH_CHECK(w.dim() == 2, "w must be [experts, ", x.size(1), "], got ", w.sizes());
    check_tensor(w, "w", x.device(), at::kFloat, {w.size(0), x.size(1)});
    const auto& logits = tensor_arg(logits_p, "logits");
    check_tensor(logits, "logits", x.device(), at::kFloat, {x.size(0), w.size(0)});
    TORCH_CHECK(x.size(0) >= 1 && x.size(0) <= LLMPROF_K_MAX_GRID_Y, x.size(0),
                " tokens: the router-logits kernel takes 1..", LLMPROF_K_MAX_GRID_Y);
    c10::cuda::CUDAGuard guard(x.device());
    check_launch(llmprof_k_router_logits(dtype_code(x), x.data_ptr(), w.data_ptr<float>(),
                                         logits.data_ptr<float>(), x.size(0), (int)w.size(0),
                                         x.size(1), c10::cuda::getCurrentCUDAStream().stream()),
                 "router_logits");
#endif
  });
}

int llmprof_decode_attention(const void* q_p, const void* k_p, const void* v_p, const void* pad_p,
                             const void* len_p, int64_t window, int tensor_cores,
                             const void* out_p) {
  return llmprof::guarded("decode_attention", [&] {
#ifndef LLMPROF_HAVE_KERNELS
    TORCH_CHECK(false, LLMPROF_NO_KERNELS_MESSAGE);
#else
    const auto& q = tensor_arg(q_p, "q");
    check_first(q, "q", 4, "[B, heads, 1, head_dim]");
    const int64_t batch = q.size(0), heads = q.size(1), hd = q.size(3);
    TORCH_CHECK(q.size(2) == 1, "q must hold one token per row, got ", q.sizes());
    TORCH_CHECK(hd == 64 || hd == 128, "decode attention takes head_dim 64 or 128, got ", hd);
    const auto& k = tensor_arg(k_p, "k_cache");
    TORCH_CHECK(k.dim() == 4, "k_cache must be [B, kv_heads, slots, head_dim], got ", k.sizes());
    const int64_t kv_heads = k.size(1), slots = k.size(2);
    TORCH_CHECK(kv_heads > 0 && heads % kv_heads == 0, heads, " heads on ", kv_heads,
                " kv heads: heads must be a multiple");
    check_like(k, q, "k_cache", {batch, kv_heads, slots, hd});
    check_like(tensor_arg(v_p, "v_cache"), q, "v_cache", {batch, kv_heads, slots, hd});
    check_tensor(tensor_arg(pad_p, "pad"), "pad", q.device(), at::kLong, {batch});
    check_tensor(tensor_arg(len_p, "len"), "len", q.device(), at::kLong, {1});
    check_like(tensor_arg(out_p, "out"), q, "out", {batch, heads, 1, hd});
    TORCH_CHECK(window >= 1 && window <= slots, "window ", window, " must lie in 1..", slots);
    TORCH_CHECK(window <= (int64_t)LLMPROF_K_DECODE_ATTN_MAX_SPLITS * LLMPROF_K_DECODE_ATTN_CHUNK,
                "decode attention takes windows of at most ",
                (int64_t)LLMPROF_K_DECODE_ATTN_MAX_SPLITS * LLMPROF_K_DECODE_ATTN_CHUNK,
                " slots, got ", window, " (the decoder gives longer windows to SDPA)");
    check_aligned16(q, "q");
    check_aligned16(k, "k_cache");
    check_aligned16(tensor_arg(v_p, "v_cache"), "v_cache");
    llmprof_k_decode_attn_shape s{};
    s.batch = (int)batch;
    s.heads = (int)heads;
    s.kv_heads = (int)kv_heads;
    s.head_dim = (int)hd;
    s.slots = slots;
    s.chunk = LLMPROF_K_DECODE_ATTN_CHUNK;
    s.splits = (int)((window + s.chunk - 1) / s.chunk);
    s.scale = (float)(1.0 / std::sqrt((double)hd));
    s.tensor_cores = tensor_cores != 0;
    auto part_o = at::empty({batch * heads, s.splits, hd}, q.options().dtype(at::kFloat));
    auto part_ml = at::empty({batch * heads, s.splits, 2}, q.options().dtype(at::kFloat));
    c10::cuda::CUDAGuard guard(q.device());
    check_launch(llmprof_k_decode_attention(
                     dtype_code(q), q.data_ptr(), k.data_ptr(),
                     tensor_arg(v_p, "v_cache").data_ptr(),
                     tensor_arg(pad_p, "pad").data_ptr<int64_t>(),
                     tensor_arg(len_p, "len").data_ptr<int64_t>(), part_o.data_ptr<float>(),
                     part_ml.data_ptr<float>(), tensor_arg(out_p, "out").data_ptr(), s,
                     c10::cuda::getCurrentCUDAStream().stream()),
                 "decode_attention");
#endif
  });
}

}  // extern "C"
