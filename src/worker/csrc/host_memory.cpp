// Page-locked host copies of tensors. tch's pin_memory always passes a device, which libtorch
// 2.11 deprecates with a warning on every call; this calls the overload without one. Follows
// the shim's error convention (shim_guard.h).
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
