#!/usr/bin/env bash
# Session 29, call B (#44): the grouped decode-attention kernel and the GEMV kernel: GPU unit
# tests, debug fast-path, then Llama-3.1-8B's step by module (the §35 command) at batch 1 with the
# GEMV off and on and at batch 32, DeepSeek-OCR's step with the GEMV off and on.
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
L=$PWD/.carry/llmprof
nvidia-smi --query-gpu=name --format=csv,noheader
s=$(date +%s)
for t in decode_attention_kernel_matches gemv_matches; do
  timeout 120 .carry/lib-tests --ignored $t --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|error" | head -6
done
echo "tests $(( $(date +%s) - s )) s"
for a in llama3_1_8b qwen2_5_0_5b; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "gemv|decode_attention|all\+" $OUT/fp_$a.out | head -8
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
print(f" tok/s {m['throughput']['tokens_per_s_aggregate']:.1f} step p50 {m['stages']['decode_step']['p50_ms']:.3f} floor {m.get('utilisation',{}).get('floor_ms',{}).get('decode_step')}")
for k in (s.get('kinds') or [])[:9]: print(f"   {k['module']:<22} {k['ms_per_run']:.4f} {100*k['share']:.1f}% x{k['times_floor'] and round(k['times_floor'],2)}")
PY
  cp $OUT/$tag/metrics.json $OUT/keep/$tag.metrics.json; cp $OUT/$tag/modules.md $OUT/keep/$tag.modules.md; rm -rf $OUT/$tag
}
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=256 infer.max_new_tokens=32"
run llama_b1 $LL
run llama_b1_gemv $LL runtime.optim.gemv_kernel=true
run llama_b32 $LL runtime.batch_size=32
OCR="model=deepseek_ocr dataset.sampling.num_samples_per_epoch=2"
run ocr_b1 $OCR
run ocr_b1_gemv $OCR runtime.optim.gemv_kernel=true
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
