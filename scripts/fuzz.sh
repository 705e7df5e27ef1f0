#!/usr/bin/env bash
# Long fuzzing of the composer (docs/fuzzing.md): builds the front-end test binary once, then runs
# each fuzz target for SECONDS (default 600) one after the other, appending one summary line per
# target to the log. `cargo test` runs the same targets for 2 s each (the smoke run).
#   scripts/fuzz.sh [SECONDS] [TARGET...]     TARGET: overrides yaml compose interpolation nsight
#                                               hub_listing settings prompts sweep_state hub_headers
# Env: LLMPROF_FUZZ_SEED=N replays a run; CARGO=... the cargo command (default cargo);
#      FUZZ_LOG=path (default target/fuzz/fuzz.log).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -z "${LIBTORCH:-}" ]; then
  export LIBTORCH_USE_PYTORCH=1
  export PATH="$PWD/.venv/bin:$PATH"
fi
secs="${1:-600}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(overrides yaml compose interpolation nsight hub_listing settings prompts sweep_state hub_headers)
declare -A test_name=(
  [overrides]=front_end::fuzz_overrides::fuzz_override_grammar
  [yaml]=front_end::fuzz_compose::fuzz_yaml_loader
  [compose]=front_end::fuzz_compose::fuzz_composer
  [interpolation]=front_end::fuzz_interpolation::fuzz_interpolation_resolver
  [nsight]=front_end::nsight_fuzz::nsight_csv_readers_never_panic_or_hang
  [hub_listing]=front_end::fuzz_parsers::fuzz_hub_listing
  [settings]=front_end::fuzz_parsers::fuzz_settings_file
  [prompts]=front_end::fuzz_parsers::fuzz_prompts_jsonl
  [sweep_state]=front_end::fuzz_parsers::fuzz_sweep_state
  [hub_headers]=front_end::fuzz_parsers::fuzz_hub_headers
)
mkdir -p target/fuzz
log="${FUZZ_LOG:-$PWD/target/fuzz/fuzz.log}"
built=$(${CARGO:-cargo} test --release -p llmprof --test front_end --no-run 2>&1 | tee /dev/stderr |
  sed -n 's/.*Executable .*(\(.*front_end-[0-9a-f]*\)).*/\1/p' | tail -1)
[ -n "$built" ] || { echo "fuzz.sh: could not find the front_end test binary" >&2; exit 2; }
# A copy, so that rebuilding while a long run goes on does not pull it from under the run.
bin="target/fuzz/front_end-$(date +%s)"
cp "$built" "$bin"
status=0
for t in "${targets[@]}"; do
  name="${test_name[$t]:-}"
  [ -n "$name" ] || { echo "fuzz.sh: unknown target '$t' (overrides yaml compose interpolation nsight hub_listing settings prompts sweep_state)" >&2; exit 2; }
  echo "== $(date -u +%FT%TZ) $t: ${secs}s ($name)" | tee -a "$log"
  out="target/fuzz/$t.out"
  LLMPROF_FUZZ_SECS="$secs" LLMPROF_FUZZ_LOG="$log" "$bin" --exact "$name" --nocapture \
    --test-threads 1 >"$out" 2>&1 || true
  grep -oE 'fuzz [a-z_]+: (ok|FAILED):.*' "$out" | tail -1 || true
  if ! grep -qE 'fuzz [a-z_]+: ok:' "$out"; then
    status=1
    echo "fuzz.sh: $t failed; the input and seed (from $out):" | tee -a "$log"
    sed -n '/fuzz [a-z_]*: FAILED/,$p' "$out" | grep -v "^thread 'fuzz-case'" | head -80 | tee -a "$log" || true
  fi
done
rm -f "$bin"
exit "$status"
