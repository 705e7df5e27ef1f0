#!/usr/bin/env bash
# Session 31 call D (#44): runtime.optim.programmatic_launch on by default. Llama-3.1-8B batch 1
# by module (the charged-duration accounting on a PDL step) and batch 128 off and on, then #44's
# table in one command (scripts/bench_targets.sh, llmprof and transformers).
source scripts/device_lib.sh
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
module_run llama_b1 $LL runtime.batch_size=1
module_run llama_b128_pdl_false $LL runtime.batch_size=128 runtime.optim.programmatic_launch=false
module_run llama_b128_pdl_true $LL runtime.batch_size=128
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
s=$(date +%s)
LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$? $(( $(date +%s) - s )) s"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/targets.md
mkdir -p $OUT/bench; for m in llama3_1_8b deepseek_ocr; do cp $OUT/targets/$m/*.md $OUT/bench/ 2>/dev/null; done; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
