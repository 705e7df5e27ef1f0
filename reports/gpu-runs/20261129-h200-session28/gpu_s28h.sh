#!/usr/bin/env bash
# DeepSeek-V3 (2 layers: a dense and an MoE layer) bf16: which fast switch moves the prompt
# logits away from eager bf16 (helper's parity run: fast bf16 1.8e-1 from HF bf16, eager 1.05e-2).
set -uo pipefail
T=$(ls -d /opt/torch/.venv/lib/python3.*/site-packages)
export LD_LIBRARY_PATH=$T/torch/lib:$T/nvidia/cu13/lib:$PWD/.carry
export LLMPROF_WORKER=$PWD/.carry/llmprof-worker
P=/opt/torch/.venv/bin/python; W=/tmp/v3; s=$(date +%s)
$P scripts/dense_hf.py make-weights --config tests/fixtures/released_configs/deepseek_v3.json --layers 2 --first-dense 1 --out $W --seed 0 --seq 64 > /tmp/mk.log 2>&1 || { tail -5 /tmp/mk.log; exit 1; }
echo "weights $(( $(date +%s) - s )) s"
run() { local tag=$1; shift; .carry/llmprof debug logits --weights $W --ids $W/ids.json --dtype bf16 --greedy 2 "$@" --out /tmp/o_$tag.safetensors > /tmp/$tag.log 2>&1 || tail -3 /tmp/$tag.log
  $P - $tag <<'PY'
import sys, torch
from safetensors.torch import load_file
t = sys.argv[1]; o = load_file(f"/tmp/o_{t}.safetensors")["prompt_last_logits"].double()
try: e = load_file("/tmp/o_eager.safetensors")["prompt_last_logits"].double()
except Exception: e = o
print(f"{t:24s} vs eager bf16: rel {((o-e).abs().max()/e.abs().max()).item():.3e} cos {torch.nn.functional.cosine_similarity(o,e,dim=0).item():.6f}")
PY
}
run eager --optim eager
run fast --optim fast
for sw in sdpa fused_projections swiglu_kernel add_rms_norm_kernel fused_rms_norm static_kv_cache; do run "no_$sw" --optim fast --off $sw; echo "  $(( $(date +%s) - s )) s"; done
