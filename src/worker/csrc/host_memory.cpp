// Page-locked host copies of tensors, and copies that do not block the host. tch's pin_memory
// always passes a device, which libtorch 2.11 deprecates with a warning on every call; this
// calls the overload without one. Follows the shim's error convention (shim_guard.h).
#include "shim.h"
#include "shim_guard.h"

#include <ATen/ATen.h>

extern "C" int llmprof_pin_memory(const void* tensor, void** out) {
  return llmprof::guarded("pin_memory", [&] {
    TORCH_CHECK(tensor != nullptr && out != nullptr, "NULL argument");
    *out = nullptr;
    const auto& t = *static_cast<const at::Tensor*>(tensor);
    *out = new at::Tensor(t.pin_memory());
  });
}

extern "C" int llmprof_is_pinned(const void* tensor, int* out) {
  return llmprof::guarded("is_pinned", [&] {
    TORCH_CHECK(tensor != nullptr && out != nullptr, "NULL argument");
    *out = static_cast<const at::Tensor*>(tensor)->is_pinned() ? 1 : 0;
  });
}

extern "C" int llmprof_copy_async(const void* dst, const void* src) {
  return llmprof::guarded("copy_async", [&] {
    TORCH_CHECK(dst != nullptr && src != nullptr, "NULL argument");
    auto d = *static_cast<const at::Tensor*>(dst);
    d.copy_(*static_cast<const at::Tensor*>(src), /*non_blocking=*/true);
  });
}
