#!/usr/bin/env bash
# Session 29, call E (#42 item 4): Mixtral-8x7B at 16 of its 32 layers (at full size the load's
# expert stacking held two copies of the experts: out of memory on the H200).
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz llmprof llmprof-worker libllmprof_shim.so
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
export PYTHON=/opt/torch/.venv/bin/python
LLMPROF=$PWD/.carry/llmprof FAMILIES="mixtral_8x7b:16" timeout 280 scripts/bench_families.sh $OUT/families_c
echo "rc=$?"; grep -E "Error|error" $OUT/families_c/*.log | tail -3
python3 -c "
import json; m=json.load(open('$OUT/families_c/mixtral_8x7b/llmprof-b1/metrics.json')); print('peak GiB b1', m.get('memory',{}).get('peak_allocated_gib'))" 2>/dev/null
find $OUT/families_c -mindepth 2 -maxdepth 2 -type d -name "llmprof-b*" -exec rm -rf {} +
