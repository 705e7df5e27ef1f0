#!/usr/bin/env bash
# Fast path vs the HF transformers reference, in ONE command on the GPU machine (issue: fast path).
#
# Runs `llmprof stage1` at each batch size on the gundam 2x3 sample page (page-01-text.png, 903
# image tokens; prompt "<image>\nFree OCR. "), 128 forced new tokens, no n-gram blocking, then
# scripts/bench_vs_hf.py, which runs transformers' DeepseekOcr2 text decoder with random weights
# at the same prompt length, batch sizes and new tokens (generate(), greedy) and prints one table:
# metric | llmprof | HF | ratio | floor | fraction of floor.
#
# Usage: scripts/bench_vs_hf.sh [OUT_DIR]
#   LLMPROF=path/to/llmprof   front-end binary (default target/release/llmprof)
#   PYTHON=python3            interpreter with torch and transformers 5.17 (the GPU machine's venv)
#   BATCHES="1 8 32"          batch sizes
#   NEW_TOKENS=128            forced new tokens per row
#   SKIP_HF=1                 llmprof only (table with empty HF columns)
#   NGRAM_ROW=0               no default-config decode row (by default, DeepSeek-OCR only: the
#                             largest batch once more with the default n-gram rule, TPOT vs none)
#   LONG_TOKENS=1000          DeepSeek-OCR only: the largest batch over pages of this many forced
#                             tokens, without and with the default n-gram rule (pages/s, the rule's
#                             TPOT cost over long pages), and scripts/bench_ngram.sh there (the
#                             rule against none over one token stream); 0 skips them
#   DISTINCT_ROW=0            DeepSeek-OCR only: no distinct-pages row (by default the largest
#                             batch once more over as many distinct pages, page-01 shifted per row
#                             by scripts/make_distinct_pages.py: decode tok/s with every row routing
#                             to its own experts; skipped with a message where Pillow is missing)
#   KINETO_ROW=0              no Kineto row (by default the first batch size's run also runs its
#                             Kineto pass with the default profiler settings: profiled ÷ timed)
#   MODEL=llama3_1_8b         a dense decoder preset instead (qwen2_5_7b, qwen2_5_0_5b): stage1 on
#                             dataset=random_tokens with PROMPT_LEN (default 1024) input tokens per
#                             row, and transformers' own Qwen2/Llama model as the reference
#                             (e.g. MODEL=llama3_1_8b BATCHES="1 32 128")
#   MODEL=hf:tests/fixtures/released_configs/NAME.json[:LAYERS[:FIRST_DENSE]]   a released config
#                             (any model_type llmprof reads) the same way: stage1 model=hf
#                             model.weights=synthetic model.config=<the file, or OUT_DIR/config.json:
#                             a copy with LAYERS layers (and, DeepSeek, FIRST_DENSE leading dense
#                             layers), scripts/dense_hf.py trim-config, which keeps every layer kind>,
#                             and transformers' model of the same config.json with random weights
#                             (e.g. MODEL=hf:tests/fixtures/released_configs/mixtral_8x7b.json:8)
#   extra arguments after OUT_DIR are llmprof overrides for every run, e.g. runtime=eager
# Without SKIP_HF, DeepSeek-OCR's vision gets HF's figure from scripts/bench_vision_hf.py (same
# views, same batch sizes).
# Output: OUT_DIR/llmprof-b<B>/ (stage-1 run directories), OUT_DIR/table.md, OUT_DIR/table.json.
# OUT_DIR must not hold an earlier benchmark's runs (the script refuses it: exit 2).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-tmp/bench-vs-hf/$(date -u +%Y%m%d-%H%M%S)}
shift || true
llmprof=${LLMPROF:-target/release/llmprof}
python=${PYTHON:-python3}
batches=${BATCHES:-"1 8 32"}
new_tokens=${NEW_TOKENS:-128}
page=datasets/samples/page-01-text.png

[[ -x "$llmprof" ]] || { echo "bench_vs_hf: $llmprof is not executable (build with cargo build --release, or set LLMPROF)" >&2; exit 2; }
[[ -f "$page" ]] || { echo "bench_vs_hf: $page is missing" >&2; exit 2; }
# llmprof never reuses a run folder (a second run of NAME goes to NAME-1), so in an OUT_DIR that
# holds an earlier benchmark the table would read the earlier runs: refuse it.
if compgen -G "$out/llmprof-*" > /dev/null; then
  echo "bench_vs_hf: $out already holds an earlier benchmark's runs ($(ls -d "$out"/llmprof-* | head -1)); give a fresh OUT_DIR (without one the script makes a new timestamped folder)" >&2
  exit 2
fi
mkdir -p "$out/page"
cp "$page" "$out/page/"
out_abs=$(cd "$out" && pwd)

# The user's overrides, for every run (after the script's own).
user_overrides=("$@")
# One DeepSeek-OCR stage-1 run into $out_abs/NAME: the sample page repeated B times = one batch of
# B identical rows (same prompt length, no padding), TOKENS forced new tokens, REPEATS timed
# repeats after one warm-up, the Kineto pass when PROFILER is true; further arguments are
# overrides.
ocr_run() { # NAME B TOKENS REPEATS PROFILER [override...]
  local name=$1 b=$2 tokens=$3 repeats=$4 prof=$5
  shift 5
  "$llmprof" stage1 dataset=folder "dataset.root=$out_abs/page" "dataset.sampling.num_epochs=$b" \
    "runtime.batch_size=$b" runtime.warmup=1 "runtime.repeats=$repeats" \
    "infer.max_new_tokens=$tokens" infer.ignore_eos=true \
    $'infer.prompt=\'<image>\nFree OCR. \'' \
    "pipeline.torch_profiler.enable=$prof" pipeline.static_analysis.enable=false \
    "hydra.run.dir=$out_abs/$name" "$@" "${user_overrides[@]}"
}

runs=()
model=${MODEL:-}
first_batch=${batches%% *}
# The profiler setting of batch b's run: the first batch runs its Kineto pass (the Kineto row).
profiler() { [[ "$1" == "$first_batch" && "${KINETO_ROW:-1}" != 0 ]] && echo true || echo false; }
prompt_len=${PROMPT_LEN:-1024}
# MODEL=hf:FILE[:LAYERS[:FIRST_DENSE]]: the config.json both sides build (a trimmed copy in OUT_DIR).
model_args=("model=$model")
hf_config=
if [[ "$model" == hf:* ]]; then
  IFS=: read -r cfg_file cfg_layers cfg_first_dense <<< "${model#hf:}"
  [[ -f "$cfg_file" ]] || { echo "bench_vs_hf: MODEL=$model: no file $cfg_file" >&2; exit 2; }
  if [[ -n "$cfg_layers" ]]; then
    hf_config=$out_abs/config.json
    "$python" scripts/dense_hf.py trim-config --config "$cfg_file" --layers "$cfg_layers" \
      ${cfg_first_dense:+--first-dense "$cfg_first_dense"} --out "$hf_config"
  else
    hf_config=$(cd "$(dirname "$cfg_file")" && pwd)/$(basename "$cfg_file")
  fi
  model_args=(model=hf model.weights=synthetic "model.config=$hf_config")
fi
for b in $batches; do
  if [[ -n "$model" ]]; then
    echo "== llmprof stage1 $model, batch $b" >&2
    "$llmprof" stage1 "${model_args[@]}" dataset=random_tokens "dataset.num_prompts=$b" \
      "dataset.input_len=$prompt_len" "dataset.output_len=$new_tokens" dataset.range_ratio=0.0 \
      "runtime.batch_size=$b" runtime.warmup=1 runtime.repeats=3 \
      "infer.max_new_tokens=$new_tokens" infer.ignore_eos=true infer.no_repeat_ngram_size=0 \
      "pipeline.torch_profiler.enable=$(profiler "$b")" pipeline.static_analysis.enable=false \
      "hydra.run.dir=$out_abs/llmprof-b$b" "${user_overrides[@]}"
    runs+=(--llmprof-run "$b=$out_abs/llmprof-b$b")
    continue
  fi
  echo "== llmprof stage1, batch $b" >&2
  ocr_run "llmprof-b$b" "$b" "$new_tokens" 3 "$(profiler "$b")" infer.no_repeat_ngram_size=0
  runs+=(--llmprof-run "$b=$out_abs/llmprof-b$b")
done

# The default-config decode row (DeepSeek-OCR): the largest batch again with the model's default
# n-gram rule (infer.no_repeat_ngram_size / ngram_window as configured), against the rule-free run.
defaults=()
if [[ -z "$model" && "${NGRAM_ROW:-1}" != 0 ]]; then
  b=${batches##* }
  echo "== llmprof stage1, batch $b, default n-gram rule" >&2
  ocr_run "llmprof-b$b-default-ngram" "$b" "$new_tokens" 3 false
  defaults+=(--llmprof-default-run "$b=$out_abs/llmprof-b$b-default-ngram")
fi

# Long pages (DeepSeek-OCR): the largest batch over LONG_TOKENS forced tokens, no rule and the
# default rule.
long=()
long_tokens=${LONG_TOKENS:-1000}
if [[ -z "$model" && "$long_tokens" != 0 ]]; then
  b=${batches##* }
  for rule in none default; do
    echo "== llmprof stage1, batch $b, $long_tokens tokens, n-gram rule: $rule" >&2
    ngram=(); [[ "$rule" == none ]] && ngram=(infer.no_repeat_ngram_size=0)
    ocr_run "llmprof-b$b-long-$rule" "$b" "$long_tokens" 2 false "${ngram[@]}"
    flag=--llmprof-long-run; [[ "$rule" == default ]] && flag=--llmprof-long-default-run
    long+=("$flag" "$b=$out_abs/llmprof-b$b-long-$rule")
  done
  # The rule against none over one token stream (the stream the rule produces, replayed).
  echo "== llmprof bench-ngram, batch $b, $long_tokens tokens, one token stream" >&2
  if BATCH=$b TOKENS=$long_tokens LLMPROF_BIN=$llmprof scripts/bench_ngram.sh "$out_abs/ngram-b$b" \
    "${user_overrides[@]}"; then
    long+=(--llmprof-ngram-json "$out_abs/ngram-b$b/ngram.json")
  else
    echo "bench_vs_hf: no one-stream n-gram rows (scripts/bench_ngram.sh failed; the other rows follow)" >&2
  fi
fi

# Distinct pages (DeepSeek-OCR): the largest batch over as many distinct pages of the same size.
distinct=()
if [[ -z "$model" && "${DISTINCT_ROW:-1}" != 0 ]]; then
  b=${batches##* }
  if "$python" scripts/make_distinct_pages.py "$page" "$b" "$out_abs/distinct-pages"; then
    echo "== llmprof stage1, batch $b, $b distinct pages" >&2
    ocr_run "llmprof-b$b-distinct" "$b" "$new_tokens" 3 false infer.no_repeat_ngram_size=0 \
      "dataset.root=$out_abs/distinct-pages" dataset.sampling.num_epochs=1
    distinct+=(--llmprof-distinct-run "$b=$out_abs/llmprof-b$b-distinct")
  else
    echo "bench_vs_hf: no distinct-pages row (scripts/make_distinct_pages.py failed)" >&2
  fi
fi

vision=()
if [[ -z "$model" && -z "${SKIP_HF:-}" ]]; then
  echo "== HF vision reference" >&2
  "$python" scripts/bench_vision_hf.py --batches "${batches// /,}" --warmup 1 --repeats 3 \
    --out-json "$out_abs/hf_vision.json" >&2
  vision=(--hf-vision-json "$out_abs/hf_vision.json")
fi

hf=()
if [[ -n "${SKIP_HF:-}" ]]; then
  hf=(--skip-hf)
  echo "== table (HF reference skipped)" >&2
else
  echo "== HF reference and table" >&2
fi
arch=(); [[ -n "$model" ]] && arch=(--arch "$model")
[[ -n "$hf_config" ]] && arch=(--hf-config "$hf_config")
"$python" scripts/bench_vs_hf.py "${runs[@]}" "${defaults[@]}" "${long[@]}" "${distinct[@]}" \
  "${vision[@]}" "${hf[@]}" \
  "${arch[@]}" --new-tokens "$new_tokens" \
  --out-md "$out_abs/table.md" --out-json "$out_abs/table.json"
