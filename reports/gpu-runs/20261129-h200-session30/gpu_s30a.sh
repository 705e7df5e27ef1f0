#!/usr/bin/env bash
# Session 30, call A (#44): decode attention's split pass on tensor cores: the GPU test (fp32,
# bf16, fp16; both passes), debug fast-path on Llama-3.1-8B and Qwen2.5-0.5B (7 query heads per kv
# head), then Llama-3.1-8B's step by module at batch 1, 32 and 128 (1,024-token prompts, 64 new)
# with the tensor-core pass off and on.
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
L=$PWD/.carry/llmprof
S0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$(date +%s)
timeout 120 .carry/lib-tests --ignored decode_attention_kernel_matches --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|error" | head -6
echo "test $(( $(date +%s) - s )) s"
for a in llama3_1_8b qwen2_5_0_5b; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "decode_attention|all\+" $OUT/fp_$a.out | head -6
done
mkdir -p $OUT/keep
run() { # tag overrides...
  local tag=$1; shift; local s=$(date +%s)
  [[ $(( $(date +%s) - S0 )) -gt 500 ]] && { echo "== $tag skipped (time)"; return; }
  timeout 120 $L stage1 "$@" hydra.run.dir=$OUT/$tag > /dev/null 2> $OUT/keep/$tag.err; local rc=$?
  echo "== $tag rc=$rc $(( $(date +%s) - s )) s"
  python3 - $OUT/$tag <<'PY'
import json,sys
d=sys.argv[1]; m=json.load(open(d+'/metrics.json'))
s=(m.get('modules') or {}).get('stages',{}).get('decode_step') or {}
print(f" tok/s {m['throughput']['tokens_per_s_aggregate']:.1f} step p50 {m['stages']['decode_step']['p50_ms']:.3f} floor {m.get('utilisation',{}).get('floor_ms',{}).get('decode_step')}")
for k in (s.get('kinds') or [])[:7]: print(f"   {k['module']:<22} {k['ms_per_run']:.4f} {100*k['share']:.1f}% x{k['times_floor'] and round(k['times_floor'],2)}")
PY
  cp $OUT/$tag/metrics.json $OUT/keep/$tag.metrics.json; cp $OUT/$tag/modules.md $OUT/keep/$tag.modules.md; rm -rf $OUT/$tag
}
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
for b in 32 128 1; do
  run llama_b${b}_cuda $LL runtime.batch_size=$b runtime.optim.decode_attention_tensor_cores=false
  run llama_b${b}_mma $LL runtime.batch_size=$b
done
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
