#!/usr/bin/env bash
# Session 27: #41 on the GPU: vision modules from graph replays, stage 2 by module (no attention
# kernel may borrow a linear layer's FLOPs), pipeline.ncu.modules, a GPU trace for HTA.
set -uo pipefail
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
L=$PWD/.carry/llmprof
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p $OUT/keep
summ() { python3 - "$1" <<'PY'
import json,sys
d=sys.argv[1]; m=json.load(open(d+'/metrics.json'))
mo=m.get('modules') or {}; mp=mo.get('mapping',{})
print(' tok/s',round(m['throughput']['tokens_per_s_aggregate'],1),'| replays',mp.get('replays_matched'),'/',mp.get('replays'),'kernels unmatched',mp.get('kernels_unmatched'),'mismatches',mp.get('mismatches_total'),'unmatched share',mo.get('unmatched_share'))
for st in ['sam','clip','projector','vision','prefill','decode_step']:
  s=mo.get('stages',{}).get(st)
  if not s: continue
  print(f" {st}: runs {s['runs']} work {s['work_ms']:.3f} idle {s['idle_inside_ms']:.3f} span {s['span_ms']:.3f} timed {s['timed_ms']} residual {s['residual_pct'] and round(s['residual_pct'],2)} layers {len(s['layers'])}")
  for k in s['kinds'][:7]: print(f"   {k['module']:<28} {k['ms_per_run']:.4f} {100*k['share']:.1f}% kernels/run {k['kernels_per_run']:.1f}")
PY
}
run1() { # tag overrides...
  local tag=$1; shift; local s=$(date +%s)
  $L stage1 "$@" hydra.run.dir=$OUT/$tag > /dev/null 2> $OUT/keep/$tag.err; local rc=$?
  echo "== $tag rc=$rc $(( $(date +%s) - s )) s"; summ $OUT/$tag
  for f in metrics.json modules.md; do cp $OUT/$tag/$f $OUT/keep/$tag.$f; done
}
run2() { # tag overrides...
  local tag=$1; shift; local s=$(date +%s)
  $L stage2 "$@" hydra.run.dir=$OUT/$tag > /dev/null 2> $OUT/keep/$tag.err; local rc=$?
  echo "== $tag rc=$rc $(( $(date +%s) - s )) s"; tail -3 $OUT/keep/$tag.err
  python3 - $OUT/$tag <<'PY'
import json,sys
d=sys.argv[1]
try: j=json.load(open(d+'/ncu_kernels.json'))
except Exception as e: print(' no ncu_kernels.json',e); sys.exit()
for k in j['kernels']:
  print(f"  {k['kernel_name'][:48]:<48} {k.get('nvtx_range')} mods={k.get('modules')} useful={k.get('useful_op')} {k.get('useful_flops')} read={k.get('dram_read_bytes')} why={k.get('useful_why_not')}")
PY
  mkdir -p $OUT/keep/$tag; cp $OUT/$tag/{roofline.md,ncu.md,ncu_kernels.json,cmd.txt} $OUT/keep/$tag/ 2>/dev/null
}
OCR="model=deepseek_ocr"
LL="model=llama3_1_8b dataset=random_tokens dataset.input_len=256"
run1 ocr_b1 $OCR dataset.sampling.num_samples_per_epoch=2
run1 ocr_b1_nograph $OCR dataset.sampling.num_samples_per_epoch=2 model.optim.vision_cuda_graph=false
# One page for a trace HTA reads (kept compressed), and report.html for the screenshots.
run1 ocr_trace $OCR dataset.sampling.num_samples_per_epoch=1 infer.max_new_tokens=32
gzip -c $OUT/ocr_trace/trace.json > $OUT/keep/ocr_trace.trace.json.gz
cp $OUT/ocr_trace/report.html $OUT/keep/ocr_trace.report.html
run2 s2_ocr $OCR pipeline.ncu.enable=true pipeline.ncu.top_k=6 infer.max_new_tokens=16
run2 s2_llama $LL pipeline.ncu.enable=true pipeline.ncu.top_k=6 infer.max_new_tokens=16
run2 s2_llama_core $LL pipeline.ncu.enable=true pipeline.ncu.top_k=2 'pipeline.ncu.modules=[layer.attention.core,lm_head]' infer.max_new_tokens=16
cp $OUT/s2_ocr/report.html $OUT/keep/s2_ocr.report.html 2>/dev/null
(cd $OUT && tar czf keep.tgz keep && rm -rf keep)
ls -la $OUT
