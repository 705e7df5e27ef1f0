#!/usr/bin/env bash
# Session 32 call B (#44): prefill graphs for the dense family, SDPA's GQA form in prefill, the
# add + RMSNorm block-per-row kernel at every row count, the GEMV for inputs up to 16,384 wide
# (Llama-3.1-8B's down at batch 1). GPU tests and debug fast-path, Llama-3.1-8B batch 1 by
# module (decode step and prefill), #44's Llama rows (llmprof only), the GEMV at wider inputs.
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 add_rms_norm_kernel gemv prefill_graphs > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
for a in llama3_1_8b deepseek_v2_lite; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"
done
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
module_run llama_b1 $LL runtime.batch_size=1
python3 - $OUT/keep/llama_b1.metrics.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(" prefill p50", round(m["stages"]["prefill"]["p50_ms"], 3), "graphs", {k: v for k, v in ((m.get("optim") or {}).get("graphs") or {}).items() if "prefill" in k})
for k in ((m.get("modules") or {}).get("stages", {}).get("prefill", {}).get("kinds") or [])[:9]:
    print(f"   {k['module']:<26} {k['ms_per_run']:.4f}")
PY
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
timeout 120 $PYTHON .carry/s32/gemv_bench.py .carry/s32/libgemv_bench.so > $OUT/gemv_bench.txt 2>&1; echo "gemv rc=$?"; cat $OUT/gemv_bench.txt
MODELS=llama3_1_8b SKIP_HF=1 LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$?"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/llama_targets.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
