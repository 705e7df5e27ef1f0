#!/usr/bin/env bash
# Session 31 call F (#44): decode attention's tensor-core split pass with fewer, longer blocks at
# batch 32 and 128 (the launch plan's wave target, an experiment-only environment variable).
source scripts/device_lib.sh
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64"
for w in 1 2 4; do LLMPROF_EXPERIMENT_ATTN_WAVES=$w module_run llama_b32_waves_$w $LL runtime.batch_size=32; done
for w in 1 2; do LLMPROF_EXPERIMENT_ATTN_WAVES=$w module_run llama_b128_waves_$w $LL runtime.batch_size=128; done
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
echo "total $(( $(date +%s) - S0 )) s"
