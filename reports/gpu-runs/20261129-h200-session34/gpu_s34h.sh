#!/usr/bin/env bash
# Session 34 call H (#44): the fused router in blocks of 1,024 threads (the first 128 sum the
# logit, the last block routes with all). Its GPU tests, debug fast-path on DeepSeek-OCR, then
# model.optim.moe_router_fused off and on alternating twice (DeepSeek-OCR batch 1, 2, 4; timed pass).
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 router_with moe_layer_with_the_router > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
s=$(date +%s); timeout 150 $L debug fast-path --arch full --steps 16 > $OUT/fp_full.out 2>&1
echo "fast-path full rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_full.out)"; grep -E "moe_router_fused" $OUT/fp_full.out | head -2
for rep in 1 2; do
  for on in false true; do
    for b in 1 2 4; do
      timeout 120 $L stage1 model=deepseek_ocr runtime.batch_size=$b model.optim.moe_router_fused=$on pipeline.torch_profiler.enable=false hydra.run.dir=$OUT/ab > /dev/null 2> $OUT/ab.err
      python3 -c "import json; m=json.load(open('$OUT/ab/metrics.json')); print('fused=$on b$b rep $rep step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4))" || tail -3 $OUT/ab.err
      rm -rf $OUT/ab
    done
  done
done | tee $OUT/ab.txt
echo "total $(( $(date +%s) - S0 )) s"
