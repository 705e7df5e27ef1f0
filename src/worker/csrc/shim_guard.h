// The shim's error convention, shared by its translation units: every C entry point runs its
// body through llmprof::guarded, which turns any C++ exception into -1 plus a per-thread message
// (read through llmprof_last_error).
#ifndef LLMPROF_SHIM_GUARD_H
#define LLMPROF_SHIM_GUARD_H

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace llmprof {

// The calling thread's last error; one variable for the whole library (C++17 inline).
inline thread_local std::string g_last_error;

inline void set_error(const char* where, const std::string& what) {
  g_last_error = std::string(where) + ": " + what;
}

// Runs `body` and converts any exception into -1 + message. `body` returns void.
template <typename F>
int guarded(const char* where, F&& body) {
  try {
    body();
    return 0;
  } catch (const c10::Error& e) {
    set_error(where, e.what_without_backtrace());
  } catch (const std::exception& e) {
    set_error(where, e.what());
  } catch (...) {
    set_error(where, "unknown C++ exception");
  }
  return -1;
}

}  // namespace llmprof

// What a kernel entry point says when this build has no CUDA kernels.
#define LLMPROF_NO_KERNELS_MESSAGE                                                            \
  "this llmprof-worker was built without llmprof's CUDA kernels (no nvcc at build time): "    \
  "run ./bootstrap.sh --yes (it installs nvidia-cuda-nvcc into .venv) and rebuild, or turn "  \
  "the kernel switch off (docs/build.md)"

#endif  // LLMPROF_SHIM_GUARD_H
