#!/usr/bin/env bash
set -uo pipefail
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 /opt/torch/.venv/bin/python .carry/sdpa_probe.py 2>&1 | grep -v Warning
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
s=$(date +%s)
LLMPROF=$PWD/.carry/llmprof PYTHON=/opt/torch/.venv/bin/python MODEL=hf:tests/fixtures/released_configs/deepseek_v2_lite.json \
  BATCHES="1 32" NEW_TOKENS=64 KINETO_ROW=0 PROMPT_LEN=512 timeout 330 scripts/bench_vs_hf.sh $OUT/bench_v2lite > $OUT/bench_v2lite.log 2>&1
echo "bench rc=$? $(( $(date +%s) - s )) s"; cat $OUT/bench_v2lite/table.md 2>/dev/null || tail -20 $OUT/bench_v2lite.log
rm -rf $OUT/bench_v2lite/llmprof-b*/trace* 2>/dev/null; find $OUT -name "*.json" -size +2M -delete
