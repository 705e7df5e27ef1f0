#!/usr/bin/env bash
# Session 29, call D (#42 item 4): the families' bench, second half (the MoE models and Llama).
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz llmprof llmprof-worker libllmprof_shim.so
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
export PYTHON=/opt/torch/.venv/bin/python
S0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
# The GEMV kernel now takes one-row calls only: Llama's batch-8 decode step with the defaults
# (was 9.40 ms with the kernel at 8 rows, 5.41 without).
timeout 90 .carry/llmprof stage1 model=llama3_1_8b dataset=random_tokens dataset.num_prompts=8 dataset.input_len=1024 \
  dataset.output_len=64 dataset.range_ratio=0.0 runtime.batch_size=8 runtime.warmup=1 runtime.repeats=3 infer.max_new_tokens=64 \
  infer.ignore_eos=true infer.no_repeat_ngram_size=0 pipeline.torch_profiler.enable=false pipeline.static_analysis.enable=false \
  hydra.run.dir=/tmp/llama_b8 > /dev/null 2> $OUT/llama_b8.err
python3 -c "import json; m=json.load(open('/tmp/llama_b8/metrics.json')); print('llama b8 default: decode step p50', round(m['stages']['decode_step']['p50_ms'],3), 'gemv', m['optim']['switches'].get('gemv_kernel'))"
LLMPROF=$PWD/.carry/llmprof FAMILIES="llama3_1_8b deepseek_v3:4:3 qwen3_30b_a3b mixtral_8x7b" \
  timeout $(( 560 - ($(date +%s) - S0) )) scripts/bench_families.sh $OUT/families_b
echo "families rc=$? $(( $(date +%s) - S0 )) s"
for f in $OUT/families_b/*.log; do echo "== $f"; grep -E "Error|error|Traceback" $f | tail -3; done
[ -f $OUT/families_b/families.md ] || python3 scripts/bench_families.py $OUT/families_b llama3_1_8b deepseek_v3:4:3 qwen3_30b_a3b mixtral_8x7b
find $OUT -name "trace*.json*" -delete; find $OUT -name "*.json" -size +2M -delete
find $OUT/families_b -mindepth 2 -maxdepth 2 -type d -name "llmprof-b*" -exec rm -rf {} +
