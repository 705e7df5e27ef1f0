// Session 33 microbenchmark: decode attention's tensor-core split pass in its variants (pipeline
// stages, the cluster combine, the early requests of cached rows) against today's (two stages,
// the combine kernel). Built from the kernel sources (#include), timed from attn_bench.py.
#include "decode_attention_mma.cu"
#include "decode_attention.cu"

static int g_pdl = 0;
extern "C" int llmprof_k_programmatic_launch(void) { return g_pdl; }
extern "C" void ab_set_pdl(int v) { g_pdl = v; }

using T = __nv_bfloat16;
template <int S, bool C, bool E>
static int go(const void* q, const void* k, const void* v, const int64_t* pad, const int64_t* len,
              float* po, float* pml, void* out, const llmprof_k_decode_attn_shape& s, int used,
              cudaStream_t st) {
  int e = llmprof_k::launch_variant<T, 128, S, C, E>(
      (const T*)q, (const T*)k, (const T*)v, pad, len, po, pml, (T*)out, s, used, st);
  if (e != 0 || C) return e;
  return launch_combine<T, 128>(po, pml, used, out, s.batch * s.heads, st);
}

// variant: 0 today (S2), 1 S3, 2 S4, 3 S2 cluster, 4 S2 cluster early, 5 S2 early, 6 S3 cluster,
// 7 S3 cluster early
extern "C" int ab_run(int variant, int used, const void* q, const void* k, const void* v,
                      const int64_t* pad, const int64_t* len, float* po, float* pml, void* out,
                      int batch, int heads, int kv, int64_t slots, int splits, void* stream) {
  llmprof_k_decode_attn_shape s{};
  s.batch = batch; s.heads = heads; s.kv_heads = kv; s.head_dim = 128; s.slots = slots;
  s.chunk = 64; s.splits = splits; s.scale = 1.f / sqrtf(128.f); s.tensor_cores = 1;
  auto st = (cudaStream_t)stream;
  switch (variant) {
    case 0: return go<2, false, false>(q, k, v, pad, len, po, pml, out, s, used, st);
    case 1: return go<3, false, false>(q, k, v, pad, len, po, pml, out, s, used, st);
    case 2: return go<4, false, false>(q, k, v, pad, len, po, pml, out, s, used, st);
    case 3: return go<2, true, false>(q, k, v, pad, len, po, pml, out, s, used, st);
    case 4: return go<2, true, true>(q, k, v, pad, len, po, pml, out, s, used, st);
    case 5: return go<2, false, true>(q, k, v, pad, len, po, pml, out, s, used, st);
    case 6: return go<3, true, false>(q, k, v, pad, len, po, pml, out, s, used, st);
    case 7: return go<3, true, true>(q, k, v, pad, len, po, pml, out, s, used, st);
  }
  return -1;
}
