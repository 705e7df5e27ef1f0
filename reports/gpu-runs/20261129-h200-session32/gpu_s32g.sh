#!/usr/bin/env bash
# Session 32 call G (#44): the final binaries (the GEMV's shim checks shared, llmprof's argmax
# kernel for each decode step's greedy choice, runtime.optim.argmax_kernel). GPU tests of the
# kernels this session touched, debug fast-path on DeepSeek-OCR, then argmax_kernel off and on
# alternating (timed pass): TPOT and the step p50 of Llama-3.1-8B and DeepSeek-OCR batch 1, and
# the generated tokens of both settings compared.
source scripts/device_lib.sh
timeout 240 .carry/lib-tests --ignored --test-threads=1 gemv add_rms_norm argmax prefill_graphs decode_attention rope_kv silu > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
s=$(date +%s); timeout 150 $L debug fast-path --arch full --steps 16 > $OUT/fp_full.out 2>&1
echo "fast-path full rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_full.out)"
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64 runtime.batch_size=1"
OCR="model=deepseek_ocr runtime.batch_size=1"
run() { # TAG OVERRIDES...
  local tag=$1; shift
  timeout 120 $L stage1 "$@" pipeline.torch_profiler.enable=false "hydra.run.dir=$OUT/$tag" > /dev/null 2> $OUT/$tag.err
  python3 -c "import json; m=json.load(open('$OUT/$tag/metrics.json')); print('$tag', 'step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4))"
  cp $OUT/$tag/predictions.jsonl $OUT/$tag.predictions.jsonl 2>/dev/null
  rm -rf "$OUT/$tag" $OUT/$tag.err
}
for r in 1 2; do
  for on in false true; do
    run llama_${on}_$r $LL runtime.optim.argmax_kernel=$on
    run ocr_${on}_$r $OCR runtime.optim.argmax_kernel=$on
  done
done 2>&1 | tee $OUT/ab.txt
for m in llama ocr; do
  cmp -s $OUT/${m}_false_1.predictions.jsonl $OUT/${m}_true_1.predictions.jsonl && echo "$m: the same tokens off and on" || echo "$m: TOKENS DIFFER"
done | tee -a $OUT/ab.txt
rm -f $OUT/*.predictions.jsonl
echo "total $(( $(date +%s) - S0 )) s"
