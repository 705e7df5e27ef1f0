#!/usr/bin/env bash
# Session 31 call J (#44 "nothing else regresses"): NVTX + NVML overhead on the default
# (graph) decode with this session's defaults, scripts/bench_overhead.sh.
source scripts/device_lib.sh
BENCH_OUT=$OUT/overhead LLMPROF_BIN=$L timeout 240 scripts/bench_overhead.sh > $OUT/overhead.log 2>&1
echo "bench_overhead rc=$?"; tail -5 $OUT/overhead.log; cat $OUT/overhead/overhead.json 2>/dev/null | head -40
echo "total $(( $(date +%s) - S0 )) s"
