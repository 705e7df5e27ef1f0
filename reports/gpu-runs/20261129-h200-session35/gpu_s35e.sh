#!/usr/bin/env bash
# Session 35 call E (2 x H200): (1) SwiGLU folded into the gate/up GEMV
# (runtime.optim.gemv_swiglu): the GEMV GPU tests (old and new), debug fast-path on DeepSeek-OCR
# and Llama-3.1-8B, the switch off and on alternating twice (DeepSeek-OCR batch 1, Llama-3.1-8B
# batch 1; DeepSeek-OCR batch 2 once), timed pass; (2) #45's failure check on GPUs: a TP=2 run
# whose rank 1 worker is killed (kill_rank.sh).
source scripts/device_lib.sh
timeout 120 .carry/lib-tests --ignored --test-threads=1 kernels_gemv > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in full llama3_1_8b; do
  s=$(date +%s); timeout 120 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "gemv_swiglu|all\+" $OUT/fp_$a.out | head -3
done
LL="model=llama3_1_8b dataset=random_tokens infer.max_new_tokens=64 dataset.input_len=1024"
ab() { # TAG SWITCH OVERRIDES...
  local tag=$1 on=$2; shift 2
  timeout 120 $L stage1 "$@" runtime.optim.gemv_swiglu=$on pipeline.torch_profiler.enable=false hydra.run.dir=$OUT/ab > /dev/null 2> $OUT/ab.err
  python3 -c "import json; m=json.load(open('$OUT/ab/metrics.json')); print('$tag gemv_swiglu=$on step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4))" || tail -3 $OUT/ab.err
  rm -rf $OUT/ab
}
for rep in 1 2; do
  for on in false true; do
    ab "ocr b1 rep $rep" $on model=deepseek_ocr runtime.batch_size=1
    ab "llama b1 rep $rep" $on $LL runtime.batch_size=1
  done
done | tee $OUT/ab.txt
for on in false true; do ab "ocr b2" $on model=deepseek_ocr runtime.batch_size=2; done | tee -a $OUT/ab.txt
source reports/gpu-runs/20261129-h200-session35/kill_rank.sh
echo "total $(( $(date +%s) - S0 )) s"
