#!/usr/bin/env bash
# Link datasets/omnidocbench/source-data to a local OmniDocBench copy and check its layout.
#
#   datasets/omnidocbench/bootstrap.sh [--download] [--require]
#
# Looks for $DATASETS_ROOT/OmniDocBench (DATASETS_ROOT defaults to $HOME/datasets), which must
# hold OmniDocBench.json and images/. Idempotent: re-running re-checks and re-points the link.
# --download  fetch OmniDocBench.json and images/ into the HF cache with
#             `llmprof dataset download` (Rust; resumes, verifies) and link
#             $DATASETS_ROOT/OmniDocBench to that snapshot (LLMPROF_BIN picks the binary)
# --require   exit 1 when the dataset is absent (default: report and exit 0; it is optional,
#             dataset=samples works without it)
# Exit status: 0 ready or absent-and-optional; 1 present but incomplete, or absent with --require.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
datasets_root="${DATASETS_ROOT:-$HOME/datasets}"
target="$datasets_root/OmniDocBench"
link="$here/source-data"
download=0
require=0
for arg in "$@"; do
    case "$arg" in
        --download) download=1 ;;
        --require) require=1 ;;
        -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "omnidocbench: unknown argument '$arg' (use --download, --require)" >&2; exit 2 ;;
    esac
done

say() { echo "omnidocbench: $*"; }

how_to_get() {
    cat >&2 <<MSG
omnidocbench: to get the dataset:
  datasets/omnidocbench/bootstrap.sh --download
  (target/release/llmprof dataset download opendatalab/OmniDocBench --include OmniDocBench.json
   --include 'images/*', then a link $target -> the printed snapshot folder), or copy a
  checkout to $target. Set DATASETS_ROOT to keep it elsewhere.
MSG
}

if (( download )) && [[ ! -d "$target" ]]; then
    llmprof="${LLMPROF_BIN:-$(dirname "$(dirname "$here")")/target/release/llmprof}"
    if [[ ! -x "$llmprof" ]]; then
        say "--download needs the llmprof binary ($llmprof): build it with ./bootstrap.sh --yes" >&2
        how_to_get
        exit 1
    fi
    if ! snapshot="$("$llmprof" dataset download opendatalab/OmniDocBench \
            --include OmniDocBench.json --include 'images/*')"; then
        say "download failed (see above); running again resumes it" >&2
        exit 1
    fi
    mkdir -p "$datasets_root"
    ln -sfn "$snapshot" "$target"
fi

# A real folder at source-data (not a link) is the user's choice: check it, never replace it.
if [[ -e "$link" && ! -L "$link" ]]; then
    src="$link"
elif [[ -d "$target" ]]; then
    ln -sfn "$target" "$link"
    src="$link"
else
    say "not found at $target (DATASETS_ROOT=${DATASETS_ROOT:-unset, default \$HOME/datasets})" >&2
    [[ -L "$link" ]] && say "leaving the dangling link $link -> $(readlink "$link")" >&2
    how_to_get
    if (( require )); then exit 1; fi
    say "skipped (optional; dataset=samples works without it)"
    exit 0
fi

missing=()
[[ -f "$src/OmniDocBench.json" ]] || missing+=("OmniDocBench.json")
[[ -d "$src/images" ]] || missing+=("images/")
if (( ${#missing[@]} > 0 )); then
    say "$(readlink -f "$src") is missing: ${missing[*]} (expected OmniDocBench/{OmniDocBench.json, images/})" >&2
    exit 1
fi
count=$(find "$src/images/" -maxdepth 1 -type f \( -iname '*.jpg' -o -iname '*.jpeg' -o -iname '*.png' \) | wc -l)
if (( count == 0 )); then
    say "$(readlink -f "$src")/images holds no jpg/png files" >&2
    exit 1
fi
say "ready: source-data -> $(readlink -f "$src") ($count page images)"
if ! grep -qv '^[[:space:]]*\(#\|$\)' "$here/subsets/dev-20.txt" 2>/dev/null; then
    say "subsets/dev-20.txt lists no pages yet; fill it with:"
    say "  ls datasets/omnidocbench/source-data/images | head -20 >> datasets/omnidocbench/subsets/dev-20.txt"
fi
