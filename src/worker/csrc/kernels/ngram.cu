// The windowed no-repeat-n-gram rule on the device in two kernels (launch.h), replacing about ten
// libtorch ops per decode step (worker/models/ngram_device.rs has the semantics and the libtorch
// version the CPU runs): ban, then the shift of the recent-id window after the step's argmax.
#include "launch.h"

#include <cuda_runtime.h>
#include <math.h>

namespace {

constexpr int kThreads = 128;

// One block per row; thread j checks candidate j (the n ids from window slot j).
__global__ void ngram_ban(float* __restrict__ logits, int64_t vocab,
                          const int64_t* __restrict__ recent, int window, int n,
                          const bool* __restrict__ bannable) {
  const int64_t row = blockIdx.x;
  const int64_t* r = recent + row * window;
  const int candidates = window - n + 1;
  for (int j = threadIdx.x; j < candidates; j += blockDim.x) {
    bool match = true;
    for (int i = 0; i < n - 1 && match; ++i) match = r[j + i] == r[window - (n - 1) + i];
    const int64_t token = r[j + n - 1];
    // Unwritten slots hold negative ids: never banned, never matched (n ≥ 2).
    if (match && token >= 0 && token < vocab && (bannable == nullptr || bannable[token])) {
      logits[row * vocab + token] = -INFINITY;
    }
  }
}

// One block per row: the window moves left by one slot and `next` enters last.
__global__ void ngram_push(int64_t* __restrict__ recent, int window,
                           const int64_t* __restrict__ next) {
  extern __shared__ int64_t row_ids[];
  int64_t* r = recent + (int64_t)blockIdx.x * window;
  for (int i = threadIdx.x; i < window; i += blockDim.x) row_ids[i] = r[i];
  __syncthreads();
  for (int i = threadIdx.x; i < window; i += blockDim.x) {
    r[i] = i + 1 < window ? row_ids[i + 1] : next[blockIdx.x];
  }
}

}  // namespace

extern "C" int llmprof_k_ngram_ban(float* logits, int64_t rows, int64_t vocab,
                                   const int64_t* recent, int window, int n,
                                   const bool* bannable, void* stream) {
  if (n < 1 || window < n || rows < 1) return (int)cudaErrorInvalidValue;
  ngram_ban<<<(unsigned)rows, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      logits, vocab, recent, window, n, bannable);
  return (int)cudaGetLastError();
}

extern "C" int llmprof_k_ngram_push(int64_t* recent, int64_t rows, int window,
                                    const int64_t* next, void* stream) {
  if (window < 1 || window > LLMPROF_K_NGRAM_MAX_WINDOW || rows < 1) {
    return (int)cudaErrorInvalidValue;
  }
  ngram_push<<<(unsigned)rows, kThreads, window * sizeof(int64_t),
               static_cast<cudaStream_t>(stream)>>>(recent, window, next);
  return (int)cudaGetLastError();
}
