#!/usr/bin/env bash
# Session 32 call J: after the read-over (shared pieces: PrefillGraphs::for_model, the seen keys
# in KeptGraphs, Attention::rope_kv_projection for prefill and decode, Argmax::new,
# DecodeSession::run_graph_stats): the GPU tests these paths reach and one stage-1 run of each
# model, timed pass (no behaviour change expected).
source scripts/device_lib.sh
timeout 200 .carry/lib-tests --ignored --test-threads=1 prefill_graphs argmax gemv rope_kv > $OUT/lib_tests.out 2>&1
echo "lib tests rc=$? $(grep -c '\.\.\. ok' $OUT/lib_tests.out) ok"; grep -E "test result|FAILED|panicked" $OUT/lib_tests.out | head -6
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=1024 infer.max_new_tokens=64 runtime.batch_size=1"
for m in llama ocr; do
  [ $m = llama ] && args="$LL" || args="model=deepseek_ocr runtime.batch_size=1"
  timeout 120 $L stage1 $args pipeline.torch_profiler.enable=false hydra.run.dir=$OUT/$m > /dev/null 2> $OUT/$m.err
  python3 -c "import json; m=json.load(open('$OUT/$m/metrics.json')); g=m['optim']['graphs'] or {}; print('$m', 'prefill', round(m['stages']['prefill']['p50_ms'], 3), 'step', round(m['stages']['decode_step']['p50_ms'], 4), 'tpot', round(m['serving']['tpot_ms']['p50_ms'], 4), 'graphs', g.get('graphs_captured'), 'prefill graphs', g.get('prefill_graphs_captured'), 'replays', g.get('prefill_replays'), 'vision', g.get('vision_graphs_captured'))"
  rm -rf $OUT/$m
done | tee $OUT/runs.txt
echo "total $(( $(date +%s) - S0 )) s"
