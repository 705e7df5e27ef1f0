// NVTX ranges for Nsight (the worker's regions): NVTX v3 is header-only, and its headers ship with
// the CUDA runtime headers the shim already compiles against (the `nvidia-nvtx` wheel torch pulls,
// or a CUDA toolkit's include/nvtx3). Without a profiler attached the calls return at once; with
// one, NVTX loads the injection library it names (NVTX_INJECTION64_PATH).
#include <nvtx3/nvToolsExt.h>

#include "shim.h"

void llmprof_nvtx_range_push(const char* message) { nvtxRangePushA(message); }

void llmprof_nvtx_range_pop(void) { nvtxRangePop(); }
