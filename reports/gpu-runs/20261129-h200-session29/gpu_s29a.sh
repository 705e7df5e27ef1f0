#!/usr/bin/env bash
# Session 29, call A: #42's GPU items: DeepSeek-V3 fast bf16 after MLA left SDPA, Gemma 3 past its
# 512-key window, and the dense families' bench (first half).
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
export PYTHON=/opt/torch/.venv/bin/python
L=$PWD/.carry/llmprof
S0=$(date +%s)
s=$(date +%s)
LLMPROF=$L HF_CONFIGS=deepseek_v3:2:1 DENSE_PRESETS= SKIP_DECODER=1 SKIP_SAM=1 OPTIMS=fast REPORT_DIR=$OUT/verify_v3 \
  timeout 240 scripts/verify_vs_hf.sh /tmp/v3 > $OUT/verify_v3.log 2>&1
echo "v3 rc=$? $(( $(date +%s) - s )) s"; cat $OUT/verify_v3/table.md 2>/dev/null | tail -8 || tail -5 $OUT/verify_v3.log
rm -rf /tmp/v3
s=$(date +%s)
LLMPROF=$L SEQ=600 HF_CONFIGS=gemma3_1b:6 DENSE_PRESETS= SKIP_DECODER=1 SKIP_SAM=1 REPORT_DIR=$OUT/verify_gemma600 \
  timeout 150 scripts/verify_vs_hf.sh /tmp/g6 > $OUT/verify_gemma600.log 2>&1
echo "gemma600 rc=$? $(( $(date +%s) - s )) s"; cat $OUT/verify_gemma600/table.md 2>/dev/null | tail -8 || tail -5 $OUT/verify_gemma600.log
rm -rf /tmp/g6
s=$(date +%s)
LLMPROF=$L FAMILIES="qwen3_0_6b gemma3_1b mistral_7b_v0_3 phi3_mini_4k" timeout $(( 575 - ($(date +%s) - S0) )) scripts/bench_families.sh $OUT/families_a
echo "families rc=$? $(( $(date +%s) - s )) s"
find $OUT -name "trace*.json*" -delete; find $OUT -name "*.json" -size +2M -delete; find $OUT -name "*.safetensors" -delete
