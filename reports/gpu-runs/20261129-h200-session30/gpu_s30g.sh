#!/usr/bin/env bash
# Session 30, call G (#44): decode attention's last-block combine in two rounds of loads, the
# split pass bounded by the cache; GPU tests of it and of add + RMSNorm (every grid), then
# Llama-3.1-8B batch 1 and 32 by module.
source scripts/device_lib.sh
for t in decode_attention_kernel_matches add_rms_norm_kernel_matches; do
  timeout 100 .carry/lib-tests --ignored $t --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked|error" | head -6
done
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
module_run llama_b1 $LL runtime.batch_size=1
module_run llama_b32 $LL runtime.batch_size=32
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
