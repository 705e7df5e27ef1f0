#!/usr/bin/env bash
# Session 31 call I: the GPU tests of the GEMV (plain and grouped), decode attention and add +
# RMSNorm under both launch policies (ordinary, then programmatic dependent launch), and the
# README's stage 1 (default config) on the GPU with this session's defaults.
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 gemv decode_attention_kernel add_rms_norm_kernel > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -4
s=$(date +%s); timeout 240 $L stage1 hydra.run.dir=$OUT/readme > $OUT/readme.out 2>&1
echo "stage1 (README) rc=$? $(( $(date +%s) - s )) s"; tail -4 $OUT/readme.out
python3 - $OUT/readme <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/metrics.json"))
st = m["stages"]
print({k: round(v.get("p50_ms", 0), 3) for k, v in st.items() if isinstance(v, dict) and "p50_ms" in v})
print("programmatic_launch", m.get("optim", {}).get("switches", {}).get("programmatic_launch"))
PY
cp $OUT/readme/report.md $OUT/readme_report.md 2>/dev/null; rm -rf $OUT/readme
echo "total $(( $(date +%s) - S0 )) s"
