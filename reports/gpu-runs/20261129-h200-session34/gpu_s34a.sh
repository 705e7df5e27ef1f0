#!/usr/bin/env bash
# Session 34 call A: session 33's review fixes on the GPU (CPU-tested only there) and
# DeepSeek-OCR-2's first run with the fused shared experts (it shares DeepSeek-OCR's decoder and
# fast.yaml). GPU tests of the MoE layer, decode attention and the routing kernels; debug
# fast-path on DeepSeek-OCR, DeepSeek-V2-Lite and DeepSeek-OCR-2; the switch off and on
# alternating twice on DeepSeek-OCR-2 (batch 1 and 32, timed pass); DeepSeek-OCR-2 batch 1 by module.
source scripts/device_lib.sh
timeout 240 .carry/lib-tests --ignored --test-threads=1 moe::gpu_tests decode_attention routing_kernel > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in full deepseek_v2_lite deepseek_ocr2; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "moe_shared|all\+" $OUT/fp_$a.out | head -4
done
for rep in 1 2; do
  for on in false true; do
    for b in 1 32; do
      timeout 120 $L stage1 model=deepseek_ocr2 runtime.batch_size=$b model.optim.moe_shared_experts_fused=$on pipeline.torch_profiler.enable=false hydra.run.dir=$OUT/ab > /dev/null 2> $OUT/ab.err
      python3 -c "import json; m=json.load(open('$OUT/ab/metrics.json')); print('ocr2 fused=$on b$b rep $rep step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4))" || tail -3 $OUT/ab.err
      rm -rf $OUT/ab
    done
  done
done | tee $OUT/ab.txt
module_run ocr2_b1 model=deepseek_ocr2 runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
