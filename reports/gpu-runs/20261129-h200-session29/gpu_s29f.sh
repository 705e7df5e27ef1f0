#!/usr/bin/env bash
# Session 29, call F: Mixtral-8x7B at full size after the handed-over load (it ran out of memory
# at load before: two copies of its experts), benched against transformers.
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz llmprof llmprof-worker libllmprof_shim.so
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
export PYTHON=/opt/torch/.venv/bin/python
LLMPROF=$PWD/.carry/llmprof FAMILIES="mixtral_8x7b" timeout 300 scripts/bench_families.sh $OUT/families_d
echo "rc=$?"; grep -E "Error|error" $OUT/families_d/*.log | tail -3
for b in 1 32; do python3 -c "
import json; m=json.load(open('$OUT/families_d/mixtral_8x7b/llmprof-b$b/metrics.json')); print('b$b peak allocated GiB', round(m['memory']['peak_allocated_gib'],1), 'load ms', round(m['setup']['load_ms']))" 2>/dev/null; done
find $OUT/families_d -mindepth 2 -maxdepth 2 -type d -name "llmprof-b*" -exec rm -rf {} +
