#!/usr/bin/env bash
# Session 33 call J (#44): how the OCR text moves with model.optim.moe_shared_experts_fused:
# llmprof infer on the sample pages (batch 1, 128 new tokens) in bf16 with the switch off and on,
# and in fp32 (the fused path is bf16/fp16 only), each bf16 text compared with the fp32 one.
source scripts/device_lib.sh
for run in "bf16_off model.optim.moe_shared_experts_fused=false" "bf16_on model.optim.moe_shared_experts_fused=true" "fp32 model.dtype=f32"; do
  set -- $run
  timeout 150 $L infer runtime.batch_size=1 infer.max_new_tokens=128 $2 hydra.run.dir=$OUT/infer_$1 > $OUT/infer_$1.log 2>&1
  echo "infer $1 rc=$?"
done
python3 - $OUT <<'PY' | tee $OUT/texts.txt
import difflib, json, sys
d = sys.argv[1]
load = lambda n: [json.loads(l) for l in open(f"{d}/infer_{n}/predictions.jsonl")]
off, on, ref = load("bf16_off"), load("bf16_on"), load("fp32")
def first_diff(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
print("page | off vs on: first differing char, similarity | off vs fp32 | on vs fp32")
tot = {"oo": 0, "of": 0, "nf": 0}
for a, b, r in zip(off, on, ref):
    s_oo = difflib.SequenceMatcher(None, a["text"], b["text"]).ratio()
    s_of = difflib.SequenceMatcher(None, a["text"], r["text"]).ratio()
    s_nf = difflib.SequenceMatcher(None, b["text"], r["text"]).ratio()
    tot["oo"] += s_oo; tot["of"] += s_of; tot["nf"] += s_nf
    print(f"{a['name'][-32:]} | {first_diff(a['text'], b['text'])}/{len(a['text'])} {s_oo:.3f} | {s_of:.3f} | {s_nf:.3f}")
n = len(off)
print(f"mean similarity: off vs on {tot['oo']/n:.3f}, off vs fp32 {tot['of']/n:.3f}, on vs fp32 {tot['nf']/n:.3f}")
PY
rm -rf $OUT/infer_*/
echo "total $(( $(date +%s) - S0 )) s"
