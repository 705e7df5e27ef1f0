#!/usr/bin/env bash
# llmprof bootstrap: installs what is missing, builds the release binaries, then links models and
# datasets. Idempotent; `--yes` answers every question with yes (CI, scripted setups).
#   ./bootstrap.sh --yes            full setup
#   LIBTORCH=/path/to/libtorch ./bootstrap.sh --yes   use an existing libtorch 2.11.0 instead of pip
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
ROOT="$PWD"
YES=0
for a in "$@"; do
  case "$a" in
    --yes|-y) YES=1 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "bootstrap.sh: unknown argument '$a' (use --yes)" >&2; exit 2 ;;
  esac
done
# Each line carries the time since the start (m:ss), so a slow step shows in the log.
SECONDS=0
say() { printf '\033[1m[bootstrap %d:%02d]\033[0m %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
ask() { [ "$YES" = 1 ] && return 0; read -r -p "$1 [y/N] " r; [ "$r" = y ] || [ "$r" = Y ]; }

TORCH_VERSION=2.11.0
# CUDA runtime headers for the C++ shim (crt/host_config.h is not in the runtime wheel torch pulls),
# and the CUDA compiler for llmprof's own kernels (nvcc, its cicc, the CCCL headers), all matching
# torch's CUDA 13.0.
CUDA_CRT=nvidia-cuda-crt==13.0.88
CUDA_NVCC="nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-cccl==13.0.85"
# CUTLASS's C++ headers (the wheel carries them under cutlass_library/source) for the Hopper GEMMs.
CUTLASS=nvidia-cutlass==4.2.0.0

# 0. Disk: torch's wheel unpacks to ~5 GiB in .venv and the release build takes ~3 GiB in target/.
#    A full disk would stop pip or cargo half-way with "No space left on device"; say so first.
need_gib=4
[ -z "${LIBTORCH:-}" ] && [ ! -x "$ROOT/.venv/bin/python" ] && need_gib=10
free_gib=$(( $(df -Pk "$ROOT" | awk 'NR==2 {print $4}') / 1048576 ))
if [ "$free_gib" -lt "$need_gib" ]; then
  echo "bootstrap.sh: only ${free_gib} GiB free on the disk of $ROOT; setup needs about ${need_gib} GiB" \
    "(torch ~5 GiB in .venv, the release build ~3 GiB in target/). Free space (old target/ folders," \
    "pip's cache: python3 -m pip cache purge) and run it again." >&2
  exit 1
fi

# 1. System packages: a font for plot labels, binutils for checks, g++ for the shim and tch's
#    wrappers, libzstd-dev + pkg-config so that zstd-sys links Debian's zstd (.cargo/config.toml).
#    (No libclang: NVTX comes through the shim, nothing runs bindgen.)
APT_PKGS="fonts-dejavu-core binutils g++ python3-venv procps libzstd-dev pkg-config"
missing=""
for p in $APT_PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && ask "install apt packages:$missing?"; then
    say "apt-get install$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  else
    echo "missing system packages:$missing — install them with: sudo apt-get install -y$missing" >&2
    exit 1
  fi
fi

# 2. Rust toolchain.
if ! command -v cargo >/dev/null; then
  echo "cargo not found — install Rust with: curl https://sh.rustup.rs -sSf | sh" >&2
  exit 1
fi

# Download the crates while pip works (the build below would wait for the downloads anyway).
cargo fetch --locked >"${TMPDIR:-/tmp}/llmprof-cargo-fetch.log" 2>&1 &
fetch_pid=$!
# LLMPROF_BUILD_TIMINGS=1 adds cargo's per-crate timing report (target/cargo-timings/).
BUILD=(cargo build --release --locked ${LLMPROF_BUILD_TIMINGS:+--timings})
EARLY_LOG="${TMPDIR:-/tmp}/llmprof-early-build.log"
build_pid=""

# 3. libtorch 2.11.0: $LIBTORCH, or a venv with torch==2.11.0 (the PyPI wheel ships libtorch).
if [ -n "${LIBTORCH:-}" ]; then
  say "using LIBTORCH=$LIBTORCH"
  export LIBTORCH
else
  PY="$ROOT/.venv/bin/python"
  if [ ! -x "$PY" ]; then
    ask "create .venv with torch==$TORCH_VERSION (about 3 GB)?" || { echo "no libtorch: set LIBTORCH or rerun with --yes" >&2; exit 1; }
    say "creating .venv"
    python3 -m venv "$ROOT/.venv"
  fi
  site=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  need_torch=0
  "$PY" -c "import torch,sys; sys.exit(0 if torch.__version__.split('+')[0]=='$TORCH_VERSION' else 1)" 2>/dev/null || need_torch=1
  [ "$need_torch" = 1 ] && "$PY" -m pip install -q --upgrade pip
  # The CUDA compiler's wheels first: the build needs them only late (the worker's build script),
  # torch earlier.
  if [ ! -f "$site/nvidia/cu13/include/crt/host_config.h" ]; then
    say "pip install $CUDA_CRT (CUDA headers for the shim)"
    "$PY" -m pip install -q --no-deps "$CUDA_CRT"
  fi
  if [ ! -x "$site/nvidia/cu13/bin/nvcc" ] || [ ! -x "$site/nvidia/cu13/nvvm/bin/cicc" ] \
     || [ ! -d "$site/nvidia/cu13/include/nv" ]; then
    say "pip install $CUDA_NVCC (nvcc for llmprof's CUDA kernels)"
    "$PY" -m pip install -q --no-deps $CUDA_NVCC
  fi
  export LIBTORCH_USE_PYTORCH=1
  export PATH="$ROOT/.venv/bin:$PATH"
  if [ "$need_torch" = 1 ]; then
    # The crates compile while pip installs torch (a minute of downloading and unpacking that
    # leaves a core free): the first step that needs torch, torch-sys's build script, comes a
    # minute or more into the build. If it comes too early, it fails on the missing torch, the
    # build stops, and step 4 builds again once pip is done, reusing what was compiled.
    wait "$fetch_pid" || true
    say "cargo build --release started beside pip (log: $EARLY_LOG)"
    "${BUILD[@]}" >"$EARLY_LOG" 2>&1 &
    build_pid=$!
    # A background job ignores Ctrl-C: stop the build with the script.
    trap 'kill "$build_pid" 2>/dev/null || true' EXIT
    trap 'exit 130' INT TERM
    say "pip install torch==$TORCH_VERSION"
    # No copy of the wheels in pip's cache: they would double the ~5 GiB this step writes.
    "$PY" -m pip install -q --no-cache-dir "torch==$TORCH_VERSION"
  fi
  # After torch: installed with --no-deps for its headers only, CUTLASS's Python package would make
  # pip's check during the torch install list its unmet requirements. The worker's build script,
  # which reads the headers, runs only after torch-sys's (minutes later). A build without the
  # CUTLASS kernels (LLMPROF_CUTLASS=0: CI, .ci/run) needs no headers.
  if [ "${LLMPROF_CUTLASS:-1}" != 0 ] &&
    [ ! -f "$site/cutlass_library/source/include/cutlass/gemm/collective/collective_builder.hpp" ]; then
    say "pip install $CUTLASS (CUTLASS headers for llmprof's Hopper GEMMs)"
    "$PY" -m pip install -q --no-deps "$CUTLASS"
  fi
fi

# 4. Build both binaries (llmprof front end, llmprof-worker with libtorch).
wait "$fetch_pid" 2>/dev/null || true
if [ -n "$build_pid" ] && wait "$build_pid"; then
  say "cargo build --release finished"
else
  [ -n "$build_pid" ] && say "the build started beside pip stopped (its log: $EARLY_LOG); building again with torch installed"
  say "cargo build --release"
  "${BUILD[@]}"
fi
say "built: $ROOT/target/release/llmprof ($(target/release/llmprof --version))"

# 5. Datasets, then models (each idempotent; symlinks are git-ignored).
for b in datasets/*/bootstrap.sh; do
  [ -f "$b" ] && { say "$b"; bash "$b"; }
done
if [ -f models/bootstrap.sh ]; then
  say "models/bootstrap.sh"
  bash models/bootstrap.sh || say "models/bootstrap.sh reported missing files: synthetic weights still work (model.weights=synthetic)"
fi
say "done. Run: target/release/llmprof stage1"
