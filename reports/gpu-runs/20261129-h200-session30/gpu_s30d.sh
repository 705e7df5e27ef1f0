#!/usr/bin/env bash
# Session 30, call D (#44): add + RMSNorm in one block of 256 threads per row for decode steps
# (GPU test, debug fast-path, Llama-3.1-8B batch 128 and 32 by module), then #44's table in one
# command (scripts/bench_targets.sh, llmprof and transformers).
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
export PYTHON=/opt/torch/.venv/bin/python
L=$PWD/.carry/llmprof
S0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 120 .carry/lib-tests --ignored add_rms_norm_kernel_matches --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|error" | head -6
s=$(date +%s); timeout 150 $L debug fast-path --arch llama3_1_8b --steps 16 > $OUT/fp_llama3_1_8b.out 2>&1
echo "fast-path rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_llama3_1_8b.out)"; grep -E "add_rms|all\+" $OUT/fp_llama3_1_8b.out | head -4
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
print(f" step p50 {st['decode_step']['p50_ms']:.3f} floor {m.get('utilisation',{}).get('floor_ms',{}).get('decode_step')} prefill p50 {st.get('prefill',{}).get('p50_ms')}")
for k in (s.get('kinds') or [])[:8]: print(f"   {k['module']:<22} {k['ms_per_run']:.4f} {100*k['share']:.1f}% x{k['times_floor'] and round(k['times_floor'],2)}")
PY
  cp $OUT/$tag/metrics.json $OUT/keep/$tag.metrics.json; cp $OUT/$tag/modules.md $OUT/keep/$tag.modules.md; rm -rf $OUT/$tag
}
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
run llama_b128 $LL runtime.batch_size=128
run llama_b32 $LL runtime.batch_size=32
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
s=$(date +%s)
LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$? $(( $(date +%s) - s )) s"; cat $OUT/targets/targets.md | grep "^|"
for f in $OUT/targets/*.log; do tail -2 $f; done
cp $OUT/targets/targets.md $OUT/targets.md; find $OUT/targets -maxdepth 2 -name "*.md" | head -20
mkdir -p $OUT/bench; for m in llama3_1_8b deepseek_ocr; do cp $OUT/targets/$m/*.md $OUT/bench/ 2>/dev/null; done; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
