#!/usr/bin/env bash
# Benchmark: `llmprof --cfg job` on the default conf with 10 overrides — whole-process time
# (median of N runs) and peak RSS — next to real Hydra 1.3 composing the same config tree.
# Target (issue 2): llmprof ≤ 10 ms median, ≤ 20 MiB peak. Usage: scripts/bench_cfg.sh [N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${1:-50}
BIN=target/release/llmprof
[ -x "$BIN" ] || { echo "build first: ./bootstrap.sh --yes" >&2; exit 1; }
OVR=(model=deepseek_ocr_tiny dataset.sampling.num_samples_per_epoch=10 runtime.repeats=5
     runtime.warmup=2 infer.max_new_tokens=64 pipeline.nsys.enable=true pipeline.ncu.top_k=3
     pipeline.nvml.interval_ms=20 model.preprocess.mode=base hardware.peak_tflops=900)

measure() { # prints "median_ms max_rss_kib" over N runs of "$@"
  python3 - "$N" "$@" <<'PY'
import resource, statistics, subprocess, sys, time
n = int(sys.argv[1]); cmd = sys.argv[2:]
times, rss = [], 0
for _ in range(n):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    times.append((time.perf_counter() - t) * 1e3)
    rss = max(rss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(f"{statistics.median(times):.2f} {rss}")
PY
}

read -r ms kib < <(measure "$BIN" --cfg job "${OVR[@]}")
printf "llmprof --cfg job (10 overrides): median %s ms, peak RSS %.1f MiB over %s runs\n" "$ms" "$(echo "$kib/1024" | bc -l)" "$N"

# Real Hydra on the same tree, in a scratch venv (needs the PyPI registry once).
HV=tmp/bench-hydra-venv
if [ ! -x "$HV/bin/python" ]; then
  python3 -m venv "$HV" && "$HV/bin/pip" install -q hydra-core==1.3.2 || { echo "hydra-core not installable here: skipping the comparison"; exit 0; }
fi
cat > tmp/bench_hydra_app.py <<PY
import hydra
from omegaconf import OmegaConf
@hydra.main(version_base="1.3", config_path="$PWD/conf", config_name="config")
def main(cfg):
    pass
if __name__ == "__main__":
    main()
PY
read -r hms hkib < <(measure "$HV/bin/python" tmp/bench_hydra_app.py --cfg job "${OVR[@]}")
printf "hydra 1.3.2 --cfg job (same tree and overrides): median %s ms, peak RSS %.1f MiB\n" "$hms" "$(echo "$hkib/1024" | bc -l)"
