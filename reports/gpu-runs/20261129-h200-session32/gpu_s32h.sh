#!/usr/bin/env bash
# Session 32 call H (#44): the same tokens with llmprof's argmax kernel and libtorch's: `llmprof
# infer` (DeepSeek-OCR, the sample page, 128 new tokens, batch 1 and 4) with
# runtime.optim.argmax_kernel off and on, predictions.jsonl's tokens and text compared.
source scripts/device_lib.sh
for b in 1 4; do
  for on in false true; do
    timeout 150 $L infer runtime.batch_size=$b dataset.sampling.num_epochs=$b infer.max_new_tokens=128 runtime.optim.argmax_kernel=$on hydra.run.dir=$OUT/infer_${b}_$on > $OUT/infer_${b}_$on.log 2>&1
    echo "infer batch $b argmax_kernel=$on rc=$?"
  done
  python3 - $OUT/infer_${b}_false/predictions.jsonl $OUT/infer_${b}_true/predictions.jsonl <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
key = lambda r: (r["name"], r["output_tokens"], r["text"])
same = [key(x) for x in a] == [key(y) for y in b]
print(f"  {len(a)} predictions, output tokens {[r['output_tokens'] for r in a]}: {'the same tokens and text' if same else 'DIFFERENT'}")
PY
done | tee $OUT/tokens.txt
rm -rf $OUT/infer_*/
echo "total $(( $(date +%s) - S0 )) s"
