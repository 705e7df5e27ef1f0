#!/usr/bin/env bash
# Session 33 call H (#44): DeepSeek-OCR's one-block MoE routing with x's rows read before the
# wait. GPU tests of the routing kernels, debug fast-path on DeepSeek-OCR and DeepSeek-V2-Lite,
# then the previous shim (b07907a, .carry/s33/old/) against this one, alternating, DeepSeek-OCR
# batch 1 and 32 (timed pass), DeepSeek-OCR batch 1 by module and #44's DeepSeek-OCR rows.
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 routing_kernel > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in full deepseek_v2_lite; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"
done
NEW_LD=$LD_LIBRARY_PATH
for rep in 1 2; do
  for which in old new; do
    [ $which = old ] && export LD_LIBRARY_PATH=$PWD/.carry/s33/old:$NEW_LD || export LD_LIBRARY_PATH=$NEW_LD
    for b in 1 32; do
      timeout 120 $L stage1 model=deepseek_ocr runtime.batch_size=$b pipeline.torch_profiler.enable=false hydra.run.dir=$OUT/ab > /dev/null 2> $OUT/ab.err
      python3 -c "import json; m=json.load(open('$OUT/ab/metrics.json')); print('$which b$b rep $rep step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4))"
      rm -rf $OUT/ab
    done
  done
done | tee $OUT/ab.txt
export LD_LIBRARY_PATH=$NEW_LD
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
grep -E "^\| layer.moe.routing" $OUT/keep/ocr_b1.modules.md
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
MODELS="deepseek_ocr" SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$?"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/targets_h.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
