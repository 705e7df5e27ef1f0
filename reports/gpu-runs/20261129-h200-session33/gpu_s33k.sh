#!/usr/bin/env bash
# Session 33 call K (#45): tensor parallelism's GPU checks on the first two-GPU machine lent since
# session 27 (scripts/verify_tp.sh, TP=2: parity of llama3_1_8b and qwen3_30b_a3b at 4 layers,
# then stage 1 of Llama-3.1-8B at batch 1 and 32 with TP=1 and TP=2; 70B skipped: the session's
# device time was nearly spent).
source scripts/device_lib.sh
nvidia-smi -L
CONFIGS="llama3_1_8b:4 qwen3_30b_a3b:4" SKIP_70B=1 LLMPROF=$L timeout 225 scripts/verify_tp.sh /tmp/vtp; echo "verify_tp rc=$?"
cat /tmp/vtp/table.md
cp /tmp/vtp/table.md /tmp/vtp/*.log $OUT/ 2>/dev/null
for d in /tmp/vtp/llama_b*; do [ -d "$d" ] && cp "$d/metrics.json" "$OUT/$(basename $d).metrics.json"; done
echo "total $(( $(date +%s) - S0 )) s"
