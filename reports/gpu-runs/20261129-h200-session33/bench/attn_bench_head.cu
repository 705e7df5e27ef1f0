// Session 33 microbenchmark: decode attention as session 32 left it (HEAD's kernel sources:
// tiles per block, two stages, the combine kernel), behind attn_bench.cu's entry point. Variant
// 0 only; `used` becomes tiles = ceil(splits / used) as its plan rounded it.
#include "decode_attention_mma.cu"
#include "decode_attention.cu"

static int g_pdl = 0;
extern "C" int llmprof_k_programmatic_launch(void) { return g_pdl; }
extern "C" void ab_set_pdl(int v) { g_pdl = v; }

using T = __nv_bfloat16;
extern "C" int ab_run(int variant, int used, const void* q, const void* k, const void* v,
                      const int64_t* pad, const int64_t* len, float* po, float* pml, void* out,
                      int batch, int heads, int kv, int64_t slots, int splits, void* stream) {
  if (variant != 0) return -1;
  llmprof_k_decode_attn_shape s{};
  s.batch = batch; s.heads = heads; s.kv_heads = kv; s.head_dim = 128; s.slots = slots;
  s.chunk = 64; s.splits = splits; s.scale = 1.f / sqrtf(128.f); s.tensor_cores = 1;
  const int tiles = (splits + used - 1) / used;
  llmprof_k::DecodeAttnMmaPlan plan{tiles, (splits + tiles - 1) / tiles};
  auto st = (cudaStream_t)stream;
  int e = llmprof_k::decode_attn_split_mma<T>((const T*)q, (const T*)k, (const T*)v, pad, len,
                                              po, pml, s, plan, st);
  if (e != 0) return e;
  return launch_combine<T, 128>(po, pml, plan.used, out, batch * heads, st);
}
