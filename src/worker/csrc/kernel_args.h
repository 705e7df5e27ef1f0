// Argument checks shared by the tensor-checking kernel wrappers (kernels.cpp,
// kernels_vision.cpp, kernels_gemm.cpp): tch passes at::Tensor*; each wrapper checks device, dtype, shape and
// layout before launching on the current stream.
#ifndef LLMPROF_KERNEL_ARGS_H
#define LLMPROF_KERNEL_ARGS_H

#include "shim.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>

#ifdef LLMPROF_HAVE_KERNELS
#include "kernels/launch.h"
#endif

namespace llmprof_kargs {

inline const at::Tensor& tensor_arg(const void* p, const char* name) {
  TORCH_CHECK(p != nullptr, name, " is NULL");
  return *static_cast<const at::Tensor*>(p);
}

#ifdef LLMPROF_HAVE_KERNELS
inline int dtype_code(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return LLMPROF_K_F32;
    case at::kBFloat16: return LLMPROF_K_BF16;
    case at::kHalf: return LLMPROF_K_F16;
    default: TORCH_CHECK(false, "unsupported dtype ", t.scalar_type(), " (float, bfloat16, half)");
  }
}

// `t` must be a contiguous `dtype` tensor of `sizes` on `device`.
inline void check_tensor(const at::Tensor& t, const char* name, c10::Device device,
                         at::ScalarType dtype, at::IntArrayRef sizes) {
  TORCH_CHECK(t.device() == device, name, " is on ", t.device(), ", not ", device);
  TORCH_CHECK(t.scalar_type() == dtype, name, " is ", t.scalar_type(), ", not ", dtype);
  TORCH_CHECK(t.sizes() == sizes, name, " has shape ", t.sizes(), ", expected ", sizes);
  TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
}

// The argument the others are checked against: a contiguous `dims`-dimensional tensor on a CUDA
// device (`shape` names its dimensions in the message), of `dtype` when one is given.
inline void check_first(const at::Tensor& t, const char* name, int64_t dims, const char* shape,
                        std::optional<at::ScalarType> dtype = std::nullopt) {
  TORCH_CHECK(t.is_cuda(), name, " must be on a CUDA device, got ", t.device());
  TORCH_CHECK(t.dim() == dims && t.is_contiguous(), name, " must be a contiguous ", shape, ", got ",
              t.sizes());
  if (dtype.has_value()) {
    TORCH_CHECK(t.scalar_type() == *dtype, name, " is ", t.scalar_type(), ", not ", *dtype);
  }
}

// `t` like `like` (device, dtype), contiguous, of `sizes`.
inline void check_like(const at::Tensor& t, const at::Tensor& like, const char* name,
                       at::IntArrayRef sizes) {
  check_tensor(t, name, like.device(), like.scalar_type(), sizes);
}

// The row-wise kernels' input: a non-empty contiguous CUDA tensor [.., hidden]; returns hidden.
inline int64_t check_rows(const at::Tensor& x, const char* name) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.dim() >= 1 && x.numel() > 0, name,
              " must be a non-empty contiguous CUDA tensor [.., hidden], got ", x.sizes(), " on ",
              x.device());
  return x.size(-1);
}

// For kernels that read or write `t` in 16-byte vectors.
inline void check_aligned16(const at::Tensor& t, const char* name) {
  TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, name,
              " must start 16-byte aligned (the kernel reads and writes it in 16-byte vectors; a "
              "fresh or contiguous-copied tensor is)");
}

inline void check_launch(int rc, const char* kernel) {
  TORCH_CHECK(rc == 0, kernel, " launch failed: ", llmprof_cuda_error_string(rc));
}
#endif

}  // namespace llmprof_kargs

#endif  // LLMPROF_KERNEL_ARGS_H
