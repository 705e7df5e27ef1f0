#!/usr/bin/env bash
# Session 34 call G (#44): the router's logits and routing in one launch
# (model.optim.moe_router_fused). GPU tests of the MoE kernels and layer and the routing kernels,
# debug fast-path on DeepSeek-OCR and DeepSeek-V2-Lite, the switch off and on alternating twice
# (DeepSeek-OCR batch 1, 2, 4 and 32, timed pass), DeepSeek-OCR batch 1 by module, #44's
# DeepSeek-OCR rows.
source scripts/device_lib.sh
timeout 240 .carry/lib-tests --ignored --test-threads=1 moe::gpu_tests routing_kernel > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in full deepseek_v2_lite; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "moe_router_fused|all\+" $OUT/fp_$a.out | head -4
done
for rep in 1 2; do
  for on in false true; do
    for b in 1 2 4 32; do
      timeout 120 $L stage1 model=deepseek_ocr runtime.batch_size=$b model.optim.moe_router_fused=$on pipeline.torch_profiler.enable=false hydra.run.dir=$OUT/ab > /dev/null 2> $OUT/ab.err
      python3 -c "import json; m=json.load(open('$OUT/ab/metrics.json')); print('fused=$on b$b rep $rep step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4))" || tail -3 $OUT/ab.err
      rm -rf $OUT/ab
    done
  done
done | tee $OUT/ab.txt
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
grep -E "^\| layer.moe.rout" $OUT/keep/ocr_b1.modules.md
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
MODELS="deepseek_ocr" SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$?"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/targets_g.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
