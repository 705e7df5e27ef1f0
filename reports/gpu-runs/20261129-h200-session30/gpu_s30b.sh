#!/usr/bin/env bash
# Session 30, call B (#44): the add + RMSNorm grid fix (GPU test; Llama-3.1-8B batch 128 and 32 by
# module), PyTorch's TunableOp (cuBLASLt algorithms timed per GEMM shape) tried through its
# environment on the same runs, and DeepSeek-OCR batch 32 with the tensor-core attention pass
# off and on (MHA: one query head per kv head).
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
L=$PWD/.carry/llmprof
S0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$(date +%s)
for t in add_rms_norm_kernel_matches decode_attention_kernel_matches; do
  timeout 120 .carry/lib-tests --ignored $t --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|error" | head -6
done
echo "tests $(( $(date +%s) - s )) s"
mkdir -p $OUT/keep
run() { # tag overrides...
  local tag=$1; shift; local s=$(date +%s)
  [[ $(( $(date +%s) - S0 )) -gt 520 ]] && { echo "== $tag skipped (time)"; return; }
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
export PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=1 PYTORCH_TUNABLEOP_FILENAME=/tmp/tunable.csv PYTORCH_TUNABLEOP_VERBOSE=1
run llama_b128_tunable $LL runtime.batch_size=128
run llama_b32_tunable $LL runtime.batch_size=32
run llama_b1_tunable $LL runtime.batch_size=1
grep -c . /tmp/tunable*.csv 2>/dev/null; head -30 /tmp/tunable*.csv 2>/dev/null | cut -c1-150
cp /tmp/tunable*.csv $OUT/ 2>/dev/null
unset PYTORCH_TUNABLEOP_ENABLED PYTORCH_TUNABLEOP_TUNING PYTORCH_TUNABLEOP_FILENAME PYTORCH_TUNABLEOP_VERBOSE
OCR="model=deepseek_ocr dataset.sampling.num_samples_per_epoch=32 runtime.batch_size=32"
run ocr_b32_cuda $OCR runtime.optim.decode_attention_tensor_cores=false
run ocr_b32_mma $OCR
grep -ih "tunable" $OUT/keep/llama_b32_tunable.err | head -5
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
