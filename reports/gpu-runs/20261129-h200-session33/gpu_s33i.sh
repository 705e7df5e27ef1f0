#!/usr/bin/env bash
# Session 33 call I (#44): DeepSeek-OCR's shared experts as slots of the grouped GEMVs
# (model.optim.moe_shared_experts_fused). GPU tests of the MoE kernels and layer, debug
# fast-path on DeepSeek-OCR and DeepSeek-V2-Lite, the switch off and on alternating twice
# (DeepSeek-OCR batch 1, 2 and 32, timed pass), DeepSeek-OCR batch 1 by module, the same tokens.
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 moe::gpu_tests > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in full deepseek_v2_lite; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "moe_shared|all\+" $OUT/fp_$a.out | head -4
done
for rep in 1 2; do
  for on in false true; do
    for b in 1 2 32; do
      timeout 120 $L stage1 model=deepseek_ocr runtime.batch_size=$b model.optim.moe_shared_experts_fused=$on pipeline.torch_profiler.enable=false hydra.run.dir=$OUT/ab > /dev/null 2> $OUT/ab.err
      python3 -c "import json; m=json.load(open('$OUT/ab/metrics.json')); print('fused=$on b$b rep $rep step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4))"
      rm -rf $OUT/ab
    done
  done
done | tee $OUT/ab.txt
for on in false true; do
  timeout 150 $L infer runtime.batch_size=1 infer.max_new_tokens=128 model.optim.moe_shared_experts_fused=$on hydra.run.dir=$OUT/infer_$on > $OUT/infer_$on.log 2>&1
  echo "infer fused=$on rc=$?"
done
python3 - $OUT/infer_false/predictions.jsonl $OUT/infer_true/predictions.jsonl <<'PY' | tee $OUT/tokens.txt
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
same_tokens = sum(x["output_tokens"] == y["output_tokens"] for x, y in zip(a, b))
same_text = sum(x["text"] == y["text"] for x, y in zip(a, b))
print(f"{len(a)} predictions: the same output tokens in {same_tokens}, the same text in {same_text}")
PY
rm -rf $OUT/infer_false $OUT/infer_true
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
