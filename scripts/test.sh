#!/usr/bin/env bash
# The test command (README): unit and integration tests of every crate of the workspace, on CPU.
# GPU tests are `#[ignore]`d here; scripts/gpu_smoke.sh runs them on a GPU machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -z "${LIBTORCH:-}" ]; then
  export LIBTORCH_USE_PYTORCH=1
  export PATH="$PWD/.venv/bin:$PATH"
fi
# Every relative link in README.md, docs/ and reports/ resolves (a file or a heading).
python3 scripts/check_md_links.py
# No two top-level modules of a crate import each other, directly or in a loop (docs/architecture.md).
python3 scripts/check_module_cycles.py
cargo test --workspace --release --locked "$@"
