#!/usr/bin/env bash
# Session 32 call D (#44): the GEMV's short-row block shape (4 warps x 4 outputs for one row of
# at most 2,048 over at least 8,192 outputs). Its GPU test, debug fast-path on DeepSeek-OCR,
# DeepSeek-OCR batch 1 by module; then a microbenchmark of add + RMSNorm folded into the GEMV's
# prologue (.carry/s32/gemv_norm_bench.py).
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 gemv > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -4
s=$(date +%s); timeout 200 $L debug fast-path --arch full --steps 16 > $OUT/fp_full.out 2>&1
echo "fast-path full rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_full.out)"; grep -E "gemv|all\+" $OUT/fp_full.out | head -6
module_run ocr_b1 model=deepseek_ocr runtime.batch_size=1
grep -E "^\| lm_head|^\| layer.mlp.gate_up" $OUT/keep/ocr_b1.modules.md | head -3
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
timeout 120 $PYTHON .carry/s32/gemv_norm_bench.py .carry/s32/libgemv_norm_bench.so > $OUT/gemv_norm_bench.txt 2>&1; echo "gemv_norm rc=$?"; cat $OUT/gemv_norm_bench.txt
echo "total $(( $(date +%s) - S0 )) s"
