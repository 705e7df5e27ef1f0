// NCCL communicators for tensor-parallel ranks (docs/design/tensor-parallel.md): NCCL itself from
// the nvidia-nccl wheel next to torch, no home-made transport. Rank 0 makes the unique id, the
// others receive it through the run directory (engine/collectives.rs); collectives run on the
// current CUDA stream, so a captured decode step records them as graph nodes.
#include "shim.h"
#include "shim_guard.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#ifdef LLMPROF_HAVE_NCCL
#include <nccl.h>
#endif

#include <cstring>

namespace {

#ifdef LLMPROF_HAVE_NCCL
void check_nccl(ncclResult_t r, const char* what) {
  TORCH_CHECK(r == ncclSuccess, what, ": ", ncclGetErrorString(r), " (", ncclGetLastError(nullptr),
              ")");
}

ncclDataType_t nccl_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return ncclFloat32;
    case at::kBFloat16: return ncclBfloat16;
    case at::kHalf: return ncclFloat16;
    default: TORCH_CHECK(false, "NCCL collectives take float, bfloat16 or half, not ", t.scalar_type());
  }
}
#endif

#define LLMPROF_NO_NCCL_MESSAGE                                                                \
  "this worker was built without NCCL (no nvidia/nccl next to torch at build time): "       \
  "tensor parallelism on GPUs needs it (pip install nvidia-nccl-cu13 into the torch venv, "  \
  "then rebuild)"

}  // namespace

extern "C" int llmprof_nccl_unique_id(char* out, size_t len) {
  return llmprof::guarded("nccl_unique_id", [&] {
#ifndef LLMPROF_HAVE_NCCL
    TORCH_CHECK(false, LLMPROF_NO_NCCL_MESSAGE);
#else
    TORCH_CHECK(len == NCCL_UNIQUE_ID_BYTES, "the NCCL id takes ", NCCL_UNIQUE_ID_BYTES, " bytes");
    ncclUniqueId id;
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::memcpy(out, id.internal, NCCL_UNIQUE_ID_BYTES);
#endif
  });
}

extern "C" int llmprof_nccl_init(const char* id_bytes, size_t len, int rank, int world,
                                 int device, void** comm_out) {
  return llmprof::guarded("nccl_init", [&] {
#ifndef LLMPROF_HAVE_NCCL
    TORCH_CHECK(false, LLMPROF_NO_NCCL_MESSAGE);
#else
    TORCH_CHECK(len == NCCL_UNIQUE_ID_BYTES, "the NCCL id takes ", NCCL_UNIQUE_ID_BYTES, " bytes");
    ncclUniqueId id;
    std::memcpy(id.internal, id_bytes, NCCL_UNIQUE_ID_BYTES);
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    ncclComm_t comm = nullptr;
    check_nccl(ncclCommInitRank(&comm, world, id, rank), "ncclCommInitRank");
    *comm_out = comm;
#endif
  });
}

// In place: `t` becomes the sum of every rank's `t`.
extern "C" int llmprof_nccl_all_reduce(void* comm, const void* t_p) {
  return llmprof::guarded("nccl_all_reduce", [&] {
#ifndef LLMPROF_HAVE_NCCL
    TORCH_CHECK(false, LLMPROF_NO_NCCL_MESSAGE);
#else
    const auto& t = *static_cast<const at::Tensor*>(t_p);
    TORCH_CHECK(t.is_cuda() && t.is_contiguous(), "all-reduce takes a contiguous CUDA tensor");
    c10::cuda::CUDAGuard guard(t.device());
    check_nccl(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_dtype(t), ncclSum,
                             static_cast<ncclComm_t>(comm),
                             c10::cuda::getCurrentCUDAStream().stream()),
               "ncclAllReduce");
#endif
  });
}

// `out` [world, numel(t)] receives every rank's `t`, rank 0 first.
extern "C" int llmprof_nccl_all_gather(void* comm, const void* t_p, const void* out_p) {
  return llmprof::guarded("nccl_all_gather", [&] {
#ifndef LLMPROF_HAVE_NCCL
    TORCH_CHECK(false, LLMPROF_NO_NCCL_MESSAGE);
#else
    const auto& t = *static_cast<const at::Tensor*>(t_p);
    const auto& out = *static_cast<const at::Tensor*>(out_p);
    TORCH_CHECK(t.is_cuda() && t.is_contiguous() && out.is_contiguous(),
                "all-gather takes contiguous CUDA tensors");
    c10::cuda::CUDAGuard guard(t.device());
    check_nccl(ncclAllGather(t.data_ptr(), out.data_ptr(), t.numel(), nccl_dtype(t),
                             static_cast<ncclComm_t>(comm),
                             c10::cuda::getCurrentCUDAStream().stream()),
               "ncclAllGather");
#endif
  });
}

// Ends the communicator: abort (a peer died or a collective hangs) or destroy.
extern "C" void llmprof_nccl_end(void* comm, int abort) {
#ifdef LLMPROF_HAVE_NCCL
  if (comm == nullptr) return;
  if (abort) {
    ncclCommAbort(static_cast<ncclComm_t>(comm));
  } else {
    ncclCommDestroy(static_cast<ncclComm_t>(comm));
  }
#else
  (void)comm;
  (void)abort;
#endif
}
