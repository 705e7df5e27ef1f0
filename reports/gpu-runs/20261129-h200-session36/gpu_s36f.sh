#!/usr/bin/env bash
# Session 36 call F (#44): decode attention's combine requests its partial outputs with the
# (maximum, denominator) pairs. Decode-attention GPU tests, debug fast-path on Llama-3.1-8B,
# call E's shim (.carry/old/) against this one alternating twice (timed pass): Llama-3.1-8B
# batch 1 and 32, DeepSeek-OCR batch 1; then #44's rows (llmprof only) at this build.
source scripts/device_lib.sh
lib_tests decode_attention
fast_path "decode_attention.*|all\+.*" llama3_1_8b
LL="model=llama3_1_8b dataset=random_tokens infer.max_new_tokens=64 dataset.input_len=1024"
for rep in 1 2; do
  for which in old new; do
    ab_side $which
    for run in "llama b1|$LL runtime.batch_size=1" "llama b32|$LL runtime.batch_size=32" "ocr b1|model=deepseek_ocr runtime.batch_size=1"; do
      tag=${run%%|*}; ov=${run#*|}
      ab_pass "$which $tag rep $rep" $ov
    done
  done
done | tee $OUT/ab.txt
ab_side new
MODELS="deepseek_ocr llama3_1_8b" SKIP_HF=1 LLMPROF=$L timeout $(( 580 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > $OUT/targets.log 2>&1
echo "== bench_targets rc=$?"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/targets_f.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
