#!/usr/bin/env bash
# Session 35 call F (2 x H200): the last commits on the GPU. The GEMV GPU tests after gemv.cu
# stopped compiling fp32 forms and gave the SwiGLU one-row forms partial groups only; debug
# fast-path on Llama-3.1-8B; a TP=2 stage-1 run's trace.rank<k>.json (distributedInfo backend
# nccl) and `llmprof analyze trace` on its run directory.
source scripts/device_lib.sh
timeout 120 .carry/lib-tests --ignored --test-threads=1 kernels_gemv > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
s=$(date +%s); timeout 90 $L debug fast-path --arch llama3_1_8b --steps 16 > $OUT/fp_llama.out 2>&1
echo "fast-path llama rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_llama.out)"; grep -E "gemv_swiglu|all\+" $OUT/fp_llama.out | head -3
s=$(date +%s)
timeout 120 $L stage1 model=llama3_1_8b dataset=random_tokens dataset.input_len=256 infer.max_new_tokens=32 runtime.tensor_parallel=2 hydra.run.dir=/tmp/tr > $OUT/tr.log 2>&1
echo "TP=2 stage1 rc=$? $(( $(date +%s) - s )) s"; ls -la /tmp/tr | grep trace
python3 - <<'PY'
import json
for k in (0, 1):
    with open(f"/tmp/tr/trace.rank{k}.json") as f:
        head = f.read(4096)
    i = head.find('"distributedInfo"'); print(k, head[i:i + 80].replace("\n", " "))
    t = json.load(open(f"/tmp/tr/trace.rank{k}.json")); print("  events", len(t["traceEvents"]), "distributedInfo", t["distributedInfo"])
PY
timeout 120 $L analyze trace /tmp/tr > $OUT/analyze.md 2> $OUT/analyze.err; echo "analyze rc=$?"; head -12 $OUT/analyze.md; grep -c WARN $OUT/analyze.err
echo "total $(( $(date +%s) - S0 )) s"
