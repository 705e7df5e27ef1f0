#!/usr/bin/env bash
# Session 30, call F (#44): decode attention's combine in the split pass's last block: its GPU
# test, debug fast-path on Llama-3.1-8B and Qwen2.5-0.5B, Llama-3.1-8B batch 1 and 32 by module,
# then #44's table (scripts/bench_targets.sh, llmprof and transformers).
source scripts/device_lib.sh
timeout 120 .carry/lib-tests --ignored decode_attention_kernel_matches --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|error" | head -6
for a in llama3_1_8b qwen2_5_0_5b; do
  s=$(date +%s); timeout 150 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$a.out 2>&1
  echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$a.out)"; grep -E "decode_attention_t|all\+" $OUT/fp_$a.out | head -4
done
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
module_run llama_b1 $LL runtime.batch_size=1
module_run llama_b32 $LL runtime.batch_size=32
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
s=$(date +%s)
LLMPROF=$L timeout $(( 590 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets > /dev/null 2>&1
echo "== bench_targets rc=$? $(( $(date +%s) - s )) s"; grep "^|" $OUT/targets/targets.md
cp $OUT/targets/targets.md $OUT/targets.md; rm -rf $OUT/targets
echo "total $(( $(date +%s) - S0 )) s"
