#!/usr/bin/env bash
# Session 32 call I (#44): after a review: a prompt shape is captured the second time it is
# prefilled (not the first), at most 16,384 tokens; the argmax kernel in the host loop too and
# checked at the first request. GPU tests of the prefill graphs and argmax; Llama-3.1-8B and
# DeepSeek-OCR batch 1 (timed pass): prefill p50, prefill graphs captured and replayed.
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 prefill_graphs argmax > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64 runtime.batch_size=1"
for m in llama ocr; do
  [ $m = llama ] && args="$LL" || args="model=deepseek_ocr runtime.batch_size=1"
  timeout 120 $L stage1 $args pipeline.torch_profiler.enable=false hydra.run.dir=$OUT/$m > /dev/null 2> $OUT/$m.err
  python3 -c "import json; m=json.load(open('$OUT/$m/metrics.json')); g=m['optim']['graphs'] or {}; print('$m', 'prefill', round(m['stages']['prefill']['p50_ms'], 3), 'step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4), 'prefill graphs', g.get('prefill_graphs_captured'), 'replays', g.get('prefill_replays'))"
  rm -rf $OUT/$m
done | tee $OUT/runs.txt
echo "total $(( $(date +%s) - S0 )) s"
