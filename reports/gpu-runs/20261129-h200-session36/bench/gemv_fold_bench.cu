// Session 36 microbenchmark: the tree's GEMV (src/worker/csrc/kernels/gemv.cu, the folded norm
// formed on the fly) with the same entry as gemv_l2_bench.cu (session 35's kernel, the norm in
// a per-block prologue, run with g_l2_ahead 0), so gemv_fold_bench.py can alternate the two.
#include "gemv.cu"

static int g_pdl = 0;
extern "C" int llmprof_k_programmatic_launch(void) { return g_pdl; }
extern "C" void ab_set_pdl(int v) { g_pdl = v; }
extern "C" int ab_set_ahead(int) { return 0; }

using T = __nv_bfloat16;

// form: 0 plain, 1 folded norm, 2 folded norm + SwiGLU, 3 SwiGLU.
extern "C" int ab_run(int form, const void* x, const void* w, void* y, int64_t n, int64_t k,
                      const void* delta, const void* nw, void* sum, void* stream) {
  auto st = (cudaStream_t)stream;
  if (form == 0 || form == 3) return launch_gemv<T>(x, w, nullptr, y, 1, n, k, form == 3, st);
  return launch_gemv_add_rms_norm<T>(x, delta, nw, 1e-5f, sum, w, nullptr, y, n, k, form == 2, st);
}
