#!/usr/bin/env bash
# Session 29, call C (#44): the GEMV kernel on by default (k <= 8192): debug fast-path on
# DeepSeek-OCR and three more families, the GEMV GPU test, then #44's table in one command
# (scripts/bench_targets.sh) and Llama's batch-8 decode with the GEMV off for comparison.
set -uo pipefail
tar -C .carry -xJf .carry/bin.tar.xz
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$T/nvidia/nccl/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
export PYTHON=/opt/torch/.venv/bin/python
L=$PWD/.carry/llmprof
S0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 100 .carry/lib-tests --ignored gemv_matches --test-threads=1 2>&1 | grep -E "test result|FAILED|panicked" | head -4
C=tests/fixtures/released_configs
for a in full $C/gemma3_1b.json $C/phi3_mini_4k.json deepseek_v2_lite_tiny; do
  s=$(date +%s); n=$(basename $a .json); timeout 100 $L debug fast-path --arch $a --steps 16 > $OUT/fp_$n.out 2>&1
  echo "fast-path $n rc=$? $(( $(date +%s) - s )) s, FAIL rows: $(grep -c FAIL $OUT/fp_$n.out)"; grep -E "^\| (gemv|all\+)" $OUT/fp_$n.out | head -4
done
s=$(date +%s)
LLMPROF=$L timeout $(( 540 - ($(date +%s) - S0) )) scripts/bench_targets.sh $OUT/targets
echo "targets rc=$? $(( $(date +%s) - s )) s"
s=$(date +%s)
timeout $(( 590 - ($(date +%s) - S0) )) $L stage1 model=llama3_1_8b dataset=random_tokens dataset.num_prompts=8 dataset.input_len=1024 \
  dataset.output_len=64 dataset.range_ratio=0.0 runtime.batch_size=8 runtime.warmup=1 runtime.repeats=3 infer.max_new_tokens=64 \
  infer.ignore_eos=true infer.no_repeat_ngram_size=0 pipeline.torch_profiler.enable=false pipeline.static_analysis.enable=false \
  runtime.optim.gemv_kernel=false hydra.run.dir=$OUT/llama_b8_nogemv > /dev/null 2> $OUT/llama_b8_nogemv.err
echo "b8 gemv off rc=$? $(( $(date +%s) - s )) s"
python3 - $OUT <<'PY'
import json,sys,glob
o=sys.argv[1]
for d in [o+'/targets/llama3_1_8b/llmprof-b8', o+'/llama_b8_nogemv']:
  try:
    m=json.load(open(d+'/metrics.json')); print(d.split('/')[-1], 'decode step p50', round(m['stages']['decode_step']['p50_ms'],3))
  except Exception as e: print(d, e)
PY
find $OUT -name "trace*.json*" -delete; find $OUT -name "*.json" -size +2M -delete; rm -rf $OUT/targets/*/llmprof-b*/kernels.md $OUT/targets/*/llmprof-b*/operators.md
