#!/usr/bin/env bash
# #45's GPU checks of tensor parallelism in one command (a machine with TP GPUs; NVLink multicast
# off as the device README asks):
#  1. parity: for each released config (scripts/dense_hf.py make-weights: seeded weights under the
#     released names, fewer layers), `llmprof debug logits --tensor-parallel TP` against
#     `--tensor-parallel 1`: fp32 last-position logits within 1e-5 of the largest and the greedy
#     tokens identical; bf16 no less accurate against fp32 TP=1 than TP=1's bf16 (10 % slack for
#     the all-reduce's extra rounding, reported);
#  2. speed: `stage1 model=llama3_1_8b` (256 prompt tokens, 32 new) at batch 1 and 32 with TP=1
#     and TP: decode step p50, and from the report's tensor_parallel section the communication
#     share, the slowest rank and the spread;
#  3. Llama-3.1-70B's configuration with synthetic weights over TP ranks (SKIP_70B=1 skips it).
#
#   scripts/verify_tp.sh [OUT_DIR]
#   LLMPROF (default target/release/llmprof), PYTHON (with torch + transformers), TP=2,
#   CONFIGS="llama3_1_8b:4 qwen3_30b_a3b:4" (NAME:LAYERS; empty: no parity checks), SEQ=64,
#   GREEDY=64, BATCHES="1 32" (empty: no stage-1 runs), SKIP_70B=1
# Output: OUT_DIR/table.md; exit 1 when a parity gate fails.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-tmp/verify-tp/$(date -u +%Y%m%d-%H%M%S)}
llmprof=${LLMPROF:-target/release/llmprof}
python=${PYTHON:-python3}
tp=${TP:-2}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out"
status=0
table=$out/table.md
echo "| check | TP=1 | TP=$tp | gate | result |" > "$table"
echo "|---|---:|---:|---|---|" >> "$table"
for c in ${CONFIGS-llama3_1_8b:4 qwen3_30b_a3b:4}; do
  name=${c%%:*}; layers=${c#*:}
  w=$out/weights-$name
  if ! "$python" scripts/dense_hf.py make-weights --config "tests/fixtures/released_configs/$name.json" \
      --layers "$layers" --out "$w" --seed 0 --seq "${SEQ:-64}" > "$out/$name.make.log" 2>&1; then
    echo "| $name | | | | make-weights failed ($out/$name.make.log) |" >> "$table"; status=1; continue
  fi
  for dtype in fp32 bf16; do
    for n in 1 "$tp"; do
      "$llmprof" debug logits --weights "$w" --ids "$w/ids.json" --dtype "$dtype" --greedy "${GREEDY:-64}" \
        --tensor-parallel "$n" --out "$out/$name.$dtype.tp$n.safetensors" > "$out/$name.$dtype.tp$n.log" 2>&1 \
        || { echo "| $name $dtype TP=$n | | | | failed ($out/$name.$dtype.tp$n.log) |" >> "$table"; status=1; }
    done
  done
  "$python" - "$out" "$name" "$tp" >> "$table" <<'PY' || status=1
import sys
from safetensors.torch import load_file
out, name, tp = sys.argv[1:4]
def read(dtype, n):
    t = load_file(f"{out}/{name}.{dtype}.tp{n}.safetensors")
    return t["prompt_last_logits"].double(), t["greedy_ids"].tolist()
def rel(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()
(f1, g1), (fn, gn) = read("fp32", 1), read("fp32", tp)
(b1, h1), (bn, hn) = read("bf16", 1), read("bf16", tp)
err = rel(fn, f1)
ok = err <= 1e-5 and gn == g1
print(f"| {name} fp32 logits, TP={tp} vs TP=1 | — | {err:.2e} | ≤ 1e-5, tokens equal ({sum(a == b for a, b in zip(gn, g1))}/{len(g1)}) | {'pass' if ok else 'FAIL'} |")
e1, en = rel(b1, f1), rel(bn, f1)
ok_b = en <= 1.1 * e1
print(f"| {name} bf16 vs fp32 TP=1 | {e1:.2e} | {en:.2e} | TP={tp} ≤ 1.1 × TP=1 | {'pass' if ok_b else 'FAIL'} |")
sys.exit(0 if ok and ok_b else 1)
PY
  rm -rf "$w"
done
echo "" >> "$table"
echo "| stage 1, llmprof llama3_1_8b | batch | decode step p50 ms | communication share | slowest rank (spread) |" >> "$table"
echo "|---|---:|---:|---:|---|" >> "$table"
for b in ${BATCHES-1 32}; do
  for n in 1 "$tp"; do
    d=$out/llama_b${b}_tp$n
    "$llmprof" stage1 model=llama3_1_8b dataset=random_tokens dataset.input_len=256 infer.max_new_tokens=32 \
      "runtime.batch_size=$b" "runtime.tensor_parallel=$n" "hydra.run.dir=$d" > "$d.log" 2>&1 \
      || { echo "| TP=$n | $b | failed ($d.log) | | |" >> "$table"; status=1; continue; }
    "$python" - "$d" "$n" "$b" >> "$table" <<'PY'
import json, sys
d, n, b = sys.argv[1:4]
m = json.load(open(f"{d}/metrics.json"))
step = m["stages"]["decode_step"]["p50_ms"]
tp = m.get("tensor_parallel")
if tp:
    shares = [r["communication_share"] for r in tp["ranks"] if r["communication_share"] is not None]
    share = f"{100 * max(shares):.1f} %" if shares else "—"
    spread = tp["spread_pct"]
    slow = f"rank {tp['slowest_rank']} ({spread:.1f} %, by {tp['compared']})" if spread is not None else f"rank {tp['slowest_rank']}"
else:
    share, slow = "—", "—"
print(f"| TP={n} | {b} | {step:.3f} | {share} | {slow} |")
PY
  done
done
if [[ -z "${SKIP_70B:-}" ]]; then
  d=$out/llama70b_tp$tp
  if "$llmprof" stage1 model=hf model.weights=synthetic model.config=tests/fixtures/released_configs/llama3_1_70b.json \
      dataset=random_tokens dataset.input_len=256 infer.max_new_tokens=32 "runtime.tensor_parallel=$tp" \
      "hydra.run.dir=$d" > "$d.log" 2>&1; then
    "$python" -c "
import json; m = json.load(open('$d/metrics.json')); tp = m['tensor_parallel']
print(f\"\\nLlama-3.1-70B synthetic, TP=$tp: decode step p50 {m['stages']['decode_step']['p50_ms']:.3f} ms, peak GiB per rank {[r['peak_allocated_gib'] for r in tp['ranks']]}, report: $d/report.md\")" >> "$table"
  else
    echo "" >> "$table"; echo "Llama-3.1-70B synthetic, TP=$tp: failed ($d.log)" >> "$table"; status=1
  fi
fi
cat "$table"
exit $status
