#!/usr/bin/env bash
# Session 34 call F (#44): the one-row GEMV's load plan per shape (gemv.cu load_plan) in the
# engine. GPU tests of the GEMV kernels, debug fast-path on DeepSeek-OCR and Llama-3.1-8B, then
# the previous shim (session 33's HEAD, .carry/old/) against this one, alternating twice:
# DeepSeek-OCR batch 1, 2 and 32 and Llama-3.1-8B batch 1 (timed pass); DeepSeek-OCR batch 1
# by module; #44's rows of both models (llmprof only) in the time left.
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 kernels_gemv > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in full llama3_1_8b; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "all\+" $OUT/fp_$a.out | head -2
done
NEW_LD=$LD_LIBRARY_PATH
LL="model=llama3_1_8b dataset=random_tokens infer.max_new_tokens=64 dataset.input_len=1024"
for rep in 1 2; do
  for which in old new; do
    [ $which = old ] && export LD_LIBRARY_PATH=$PWD/.carry/old:$NEW_LD || export LD_LIBRARY_PATH=$NEW_LD
    for run in "ocr b1|model=deepseek_ocr runtime.batch_size=1" "ocr b2|model=deepseek_ocr runtime.batch_size=2" \
               "ocr b32|model=deepseek_ocr runtime.batch_size=32" "llama b1|$LL runtime.batch_size=1"; do
      tag=${run%%|*}; ov=${run#*|}
      timeout 150 $L stage1 $ov pipeline.torch_profiler.enable=false hydra.run.dir=$OUT/ab > /dev/null 2> $OUT/ab.err
      python3 -c "import json; m=json.load(open('$OUT/ab/metrics.json')); print('$which $tag rep $rep step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4))" || tail -3 $OUT/ab.err
      rm -rf $OUT/ab
    done
  done
done | tee $OUT/ab.txt
export LD_LIBRARY_PATH=$NEW_LD
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
MODELS="deepseek_ocr llama3_1_8b" SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$?"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/targets_f.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
