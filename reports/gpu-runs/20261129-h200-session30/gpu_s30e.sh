#!/usr/bin/env bash
# Session 30, call E (#44): the tensor-core kernel for projections of 2-32 rows (inside
# runtime.optim.gemv_kernel): its GPU test with the GEMV's, debug fast-path on Llama-3.1-8B and
# DeepSeek-OCR, then Llama-3.1-8B batch 32 and 8 by module and DeepSeek-OCR batch 1/32
# (bench_targets, llmprof only) with the kernels off and on.
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
export PYTHON=/opt/torch/.venv/bin/python
L=$PWD/.carry/llmprof
S0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 120 .carry/lib-tests --ignored gemv_matches --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|error" | head -6
for a in llama3_1_8b full; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "gemv|all\+" $OUT/fp_$a.out | head -8
done
mkdir -p $OUT/keep
run() { # tag overrides...
  local tag=$1; shift; local s=$(date +%s)
  timeout 150 $L stage1 "$@" hydra.run.dir=$OUT/$tag > /dev/null 2> $OUT/keep/$tag.err; local rc=$?
  echo "== $tag rc=$rc $(( $(date +%s) - s )) s"
  python3 - $OUT/$tag <<'PY'
import json,sys
d=sys.argv[1]; m=json.load(open(d+'/metrics.json'))
s=(m.get('modules') or {}).get('stages',{}).get('decode_step') or {}
st=m['stages']
print(f" step p50 {st['decode_step']['p50_ms']:.3f} floor {m.get('utilisation',{}).get('floor_ms',{}).get('decode_step')}")
for k in (s.get('kinds') or [])[:7]: print(f"   {k['module']:<22} {k['ms_per_run']:.4f} {100*k['share']:.1f}% x{k['times_floor'] and round(k['times_floor'],2)}")
PY
  cp $OUT/$tag/metrics.json $OUT/keep/$tag.metrics.json; cp $OUT/$tag/modules.md $OUT/keep/$tag.modules.md; rm -rf $OUT/$tag
}
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
for b in 32 8; do
  run llama_b${b}_cublas $LL runtime.batch_size=$b runtime.optim.gemv_kernel=false
  run llama_b${b}_rows $LL runtime.batch_size=$b
done
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
for g in false true; do
  s=$(date +%s)
  MODELS=deepseek_ocr SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/ocr_g_$g runtime.optim.gemv_kernel=$g > /dev/null 2>&1
  echo "== ocr gemv_kernel=$g rc=$? $(( $(date +%s) - s )) s"; grep "DeepSeek-OCR" $OUT/ocr_g_$g/targets.md
  cp $OUT/ocr_g_$g/targets.md $OUT/ocr_targets_gemv_$g.md; rm -rf $OUT/ocr_g_$g
done
echo "total $(( $(date +%s) - S0 )) s"
