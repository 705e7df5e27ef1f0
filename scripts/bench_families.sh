#!/usr/bin/env bash
# Every dense_decoder family against transformers on one GPU, in one command (#42 item 4): for
# each released config (tests/fixtures/released_configs), scripts/bench_vs_hf.sh with
# MODEL=hf:<config>[:LAYERS] at batch 1 and 32, then one table (scripts/bench_families.py):
# decode ms/step at batch 1 and tok/s at batch 32 for llmprof and transformers' generate(), the
# bandwidth floor from llmprof's own metrics.json, and llmprof's fraction of it.
#
#   scripts/bench_families.sh [OUT_DIR]
#   FAMILIES="qwen3_0_6b mistral_7b_v0_3 ..."   NAME[:LAYERS[:FIRST_DENSE]] each (default: one
#             model per model_type at full size, except DeepSeek-V3 at 4 layers: 671 B
#             parameters do not fit one GPU)
#   LLMPROF, PYTHON, NEW_TOKENS (default 64), PROMPT_LEN (default 512) as bench_vs_hf.sh takes them
# Output: OUT_DIR/<name>/ (each bench's runs and table), OUT_DIR/families.md.
# A family whose bench fails gets its row marked failed (its log named); the others still run.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-tmp/bench-families/$(date -u +%Y%m%d-%H%M%S)}
families=${FAMILIES:-"qwen3_0_6b llama3_1_8b mistral_7b_v0_3 phi3_mini_4k gemma3_1b mixtral_8x7b qwen3_30b_a3b deepseek_v2_lite deepseek_v3:4:3"}
python=${PYTHON:-python3}
mkdir -p "$out"
for f in $families; do
  name=${f%%:*}; rest=${f#"$name"}
  cfg=tests/fixtures/released_configs/$name.json
  [[ -f "$cfg" ]] || { echo "bench_families: no released config $cfg" >&2; exit 2; }
  s=$(date +%s)
  MODEL="hf:$cfg$rest" BATCHES="1 32" NEW_TOKENS=${NEW_TOKENS:-64} PROMPT_LEN=${PROMPT_LEN:-512} \
    KINETO_ROW=0 scripts/bench_vs_hf.sh "$out/$name" > "$out/$name.log" 2>&1
  echo "$name: rc=$? $(( $(date +%s) - s )) s"
done
"$python" scripts/bench_families.py "$out" $families | tee "$out/families.md"
