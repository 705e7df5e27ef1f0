#!/usr/bin/env bash
# Session 32 call F (#44): runtime.optim.gemv_add_rms_norm off and on, alternating, on one
# machine: Llama-3.1-8B and DeepSeek-OCR batch 1, the decode step's p50 (timed pass only).
source scripts/device_lib.sh
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64 runtime.batch_size=1"
OCR="model=deepseek_ocr runtime.batch_size=1"
step() { # TAG OVERRIDES...
  local tag=$1; shift
  timeout 120 $L stage1 "$@" pipeline.torch_profiler.enable=false "hydra.run.dir=$OUT/$tag" > /dev/null 2> $OUT/$tag.err
  python3 -c "import json,sys; m=json.load(open('$OUT/$tag/metrics.json')); print('$tag', round(m['stages']['decode_step']['p50_ms'], 4))"
  rm -rf "$OUT/$tag"
}
for r in 1 2 3; do
  for on in false true; do
    step llama_${on}_$r $LL runtime.optim.gemv_add_rms_norm=$on
    step ocr_${on}_$r $OCR runtime.optim.gemv_add_rms_norm=$on
  done
done 2>&1 | tee $OUT/ab.txt
echo "total $(( $(date +%s) - S0 )) s"
