#!/usr/bin/env bash
# Session 30, call C (#44): the add + RMSNorm kernels with the row's loads before their use and
# decode attention's two-round combine (GPU tests; Llama-3.1-8B batch 128, 32 and 1 by module),
# then DeepSeek-OCR batch 1 and 32 (scripts/bench_targets.sh, llmprof only) with the tensor-core
# attention pass off and on (MHA: one query head per kv head).
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
export PYTHON=/opt/torch/.venv/bin/python
L=$PWD/.carry/llmprof
S0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$(date +%s)
for t in add_rms_norm_kernel_matches decode_attention_kernel_matches; do
  timeout 120 .carry/lib-tests --ignored $t --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|error" | head -6
done
echo "tests $(( $(date +%s) - s )) s"
s=$(date +%s); timeout 150 $L debug fast-path --arch llama3_1_8b --steps 16 > $OUT/fp_llama3_1_8b.out 2>&1
echo "fast-path rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_llama3_1_8b.out)"; grep -E "add_rms|decode_attention_t|all\+" $OUT/fp_llama3_1_8b.out | head -6
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
run llama_b1 $LL runtime.batch_size=1
for tc in false true; do
  s=$(date +%s)
  MODELS=deepseek_ocr SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/ocr_tc_$tc runtime.optim.decode_attention_tensor_cores=$tc > /dev/null 2>&1
  echo "== ocr tensor_cores=$tc rc=$? $(( $(date +%s) - s )) s"; grep "DeepSeek-OCR" $OUT/ocr_tc_$tc/targets.md
  cp $OUT/ocr_tc_$tc/targets.md $OUT/ocr_targets_tc_$tc.md; tail -3 $OUT/ocr_tc_$tc/deepseek_ocr.log; rm -rf $OUT/ocr_tc_$tc
done
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
