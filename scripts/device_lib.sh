# Shared by the scripts that run on the GPU machine (reports/gpu-runs/<date>-<gpu>-<session>/*.sh):
# source it from the repository root. It unpacks the carried binaries (.carry/bin.tar.xz: llmprof,
# llmprof-worker, libllmprof_shim.so, lib-tests; docs/build.md "Carrying binaries to a GPU
# machine"), points the worker at torch's libraries in /opt/torch/.venv, and gives
# `module_run TAG OVERRIDE...`: one stage-1 run into $OUT/TAG whose decode step is printed by
# module (the Kineto pass's breakdown), its metrics.json and modules.md kept in $OUT/keep, the
# rest of the run directory removed; `lib_tests` and `fast_path` for the GPU checks; `ab_side`
# and `ab_pass` for an A/B of two builds or a switch.
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz
_site=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$_site/torch/lib:$_site/nvidia/cu13/lib:$_site/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
export PYTHON=/opt/torch/.venv/bin/python
L=$PWD/.carry/llmprof
S0=$(date +%s)
mkdir -p "$OUT/keep"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader

module_run() { # TAG OVERRIDE...
  local tag=$1 s
  shift
  s=$(date +%s)
  timeout "${RUN_TIMEOUT:-150}" "$L" stage1 "$@" "hydra.run.dir=$OUT/$tag" > /dev/null 2> "$OUT/keep/$tag.err"
  echo "== $tag rc=$? $(( $(date +%s) - s )) s"
  python3 - "$OUT/$tag" <<'PY'
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/metrics.json"))
s = (m.get("modules") or {}).get("stages", {}).get("decode_step") or {}
floor = m.get("utilisation", {}).get("floor_ms", {}).get("decode_step")
print(f" step p50 {m['stages']['decode_step']['p50_ms']:.3f} floor {floor}")
for k in (s.get("kinds") or [])[:8]:
    x = k["times_floor"] and round(k["times_floor"], 2)
    print(f"   {k['module']:<26} {k['ms_per_run']:.4f} {100 * k['share']:.1f}% x{x}")
PY
  cp "$OUT/$tag/metrics.json" "$OUT/keep/$tag.metrics.json" 2>/dev/null
  cp "$OUT/$tag/modules.md" "$OUT/keep/$tag.modules.md" 2>/dev/null
  rm -rf "${OUT:?}/$tag"
}

# lib_tests FILTER...: the worker's GPU unit tests matching the filters, one at a time (one
# captures a CUDA graph, which a sync beside it fails), into $OUT/lib_tests.out; prints the exit,
# the count passed and any failure. TEST_TIMEOUT bounds it (150 s).
lib_tests() {
  timeout "${TEST_TIMEOUT:-150}" .carry/lib-tests --ignored --test-threads=1 "$@" > "$OUT/lib_tests.out" 2>&1
  echo "lib tests rc=$? $(grep -c '\.\.\. ok' "$OUT/lib_tests.out") ok"
  grep -E "test result|FAILED|panicked" "$OUT/lib_tests.out" | head -6
}

# fast_path ROWS ARCH...: `debug fast-path` (16 steps) on each architecture into $OUT/fp_ARCH.out;
# prints its exit, time and FAIL rows, and the rows matching the regex ROWS. FP_TIMEOUT bounds
# each (150 s).
fast_path() {
  local rows=$1 a s
  shift
  for a in "$@"; do
    s=$(date +%s)
    timeout "${FP_TIMEOUT:-150}" "$L" debug fast-path --arch "$a" --steps 16 > "$OUT/fp_$a.out" 2>&1
    echo "fast-path $a rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL "$OUT/fp_$a.out")"
    grep -E "$rows" "$OUT/fp_$a.out" | head -6
  done
}

# ab_side old|new: the build the runs after it take. "old" puts what .carry/old holds (a previous
# libllmprof_shim.so, llmprof-worker, or both) in place of this carry's; "new" this carry's.
_new_ld=$LD_LIBRARY_PATH
_new_worker=$LLMPROF_WORKER
ab_side() {
  export LD_LIBRARY_PATH=$_new_ld LLMPROF_WORKER=$_new_worker
  if [ "$1" = old ]; then
    [ -e .carry/old/libllmprof_shim.so ] && export LD_LIBRARY_PATH=$PWD/.carry/old:$_new_ld
    [ -e .carry/old/llmprof-worker ] && export LLMPROF_WORKER=$PWD/.carry/old/llmprof-worker
  fi
  return 0
}

# ab_pass LABEL OVERRIDE...: one stage-1 run without the Kineto pass into $OUT/ab, printing
# "LABEL step <decode step p50 ms> tpot <TPOT p50 ms>" (or the run's last error lines), the run
# directory removed. The caller sets the build it compares (LD_LIBRARY_PATH for a shim,
# LLMPROF_WORKER for a worker) or passes the switch as an override; alternate the two sides.
ab_pass() {
  local label=$1
  shift
  timeout "${RUN_TIMEOUT:-150}" "$L" stage1 "$@" pipeline.torch_profiler.enable=false "hydra.run.dir=$OUT/ab" > /dev/null 2> "$OUT/ab.err"
  python3 - "$OUT/ab" "$label" <<'PY' || tail -3 "$OUT/ab.err"
import json, sys
m = json.load(open(sys.argv[1] + "/metrics.json"))
print(sys.argv[2], "step", round(m["stages"]["decode_step"]["p50_ms"], 4),
      "tpot", round(m["serving"]["tpot_ms"]["p50_ms"], 4))
PY
  rm -rf "${OUT:?}/ab"
}
