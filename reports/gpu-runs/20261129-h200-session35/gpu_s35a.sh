#!/usr/bin/env bash
# Session 35 call A (2 x H200): the GEMV GPU tests' new shapes (session 34's review: one test per
# load plan, never run on a GPU), then #45's speed checks: scripts/verify_tp.sh without parity
# configs (parity passed in session 33): Llama-3.1-8B stage 1 at batch 1 and 32 with TP=1 and
# TP=2, and Llama-3.1-70B's configuration with synthetic weights over 2 ranks. Run directories
# stay on the machine; the table, logs, metrics.json and report.md come back.
source scripts/device_lib.sh
nvidia-smi topo -m | head -4
timeout 90 .carry/lib-tests --ignored --test-threads=1 kernels_gemv > $OUT/gemv_tests.out 2>&1
echo "gemv tests rc=$? $(grep -c '\.\.\. ok' $OUT/gemv_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/gemv_tests.out | head -6
v=/tmp/vtp
s=$(date +%s)
CONFIGS= TP=2 LLMPROF=$L timeout 440 scripts/verify_tp.sh $v > $OUT/verify_tp.out 2>&1
echo "verify_tp rc=$? $(( $(date +%s) - s )) s"
cat $v/table.md
mkdir -p $OUT/vtp
cp $v/*.log $v/table.md $OUT/vtp/ 2>/dev/null
for d in $v/*/; do n=$(basename $d); mkdir -p $OUT/vtp/$n; cp $d/metrics.json $d/report.md $d/modules.md $OUT/vtp/$n/ 2>/dev/null; done
(cd $OUT && tar czf vtp.tgz vtp && rm -rf vtp)
echo "total $(( $(date +%s) - S0 )) s"
