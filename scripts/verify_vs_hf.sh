#!/usr/bin/env bash
# Differential check of llmprof's DeepSeek-OCR decoder and SAM encoder, and of its dense decoder
# family (presets and released configs, scripts/dense_hf.py), against HF transformers
# (scripts/verify_vs_hf.py; docs/verification.md says what is compared and why).
#
#   LLMPROF="env LD_LIBRARY_PATH=... /path/to/llmprof" scripts/verify_vs_hf.sh [WORK]
#
# WORK (default /tmp/llmprof-verify, on local disk) receives inputs, weights (about 12 GB of fp32
# decoder weights; one dense model's folder at a time, up to 28 GB for deepseek_v3), outputs,
# logs/, timings.txt, results.jsonl and table.md.
#
# Environment (all optional except LLMPROF):
#   PYTHON     python with torch + transformers 5.17 + safetensors (default /opt/torch/.venv/bin/python, else python3)
#   SEED=0 SEQ=64 GREEDY=64 SAM_SIZES="1024 512"
#   DEC_ARGS   extra make-weights args for the decoder (CPU dry runs: "--tiny" or "--layers 2")
#   SAM_ARGS   extra make-weights args for SAM ("--tiny")
#   PYDEVICE   device for the HF side (default: cuda if available)
#   EXPERTS_IMPL=grouped_mm   transformers experts implementation of the reference (or eager)
#   GATE_BF16=0  set 1 to make the bf16 bounds fail the run too
#   SKIP_DECODER=1 / SKIP_SAM=1  run only one half
#   DENSE_PRESETS="qwen2_5_0_5b qwen2_5_7b llama3_1_8b"  dense decoder presets checked the same
#               way (scripts/dense_hf.py builds HF's Qwen2/Llama with seeded weights); "" skips them
#   DENSE_LAYERS=4  layers of each dense model (real dimensions otherwise; empty: all layers)
#   HF_CONFIGS="qwen3_0_6b:4 mistral_7b_v0_3:4 mixtral_8x7b:2 qwen3_30b_a3b:2 phi3_mini_4k:4 gemma3_1b:6
#               deepseek_v2_lite:2:1 deepseek_v3:2:1"  released configs checked the same way, each
#               NAME[:LAYERS[:FIRST_DENSE]]: tests/fixtures/released_configs/NAME.json (the released
#               config.json, README.md there) at LAYERS layers (empty: all), DeepSeek ones with
#               FIRST_DENSE leading dense layers so that dense and MoE layers are both present;
#               make-weights refuses a layer count that drops a layer kind of the released model
#               (Gemma 3's first global layer is layer 5: 6 layers). transformers' own class of the
#               model_type is the reference; "" skips them. On-disk fp32 sizes at these counts:
#               0.9, 4.6, 12.7, 7.5, 2.6, 1.9, 4.3 GB; deepseek_v3 28 GB (stored bf16, see
#               HF_STORE_DTYPE). Each model's folder is deleted once its rows are done. On an
#               H200 all of them take about 15 minutes, past the device tool's 10 per call: split
#               them, e.g. "deepseek_v3:2:1 deepseek_v2_lite:2:1 gemma3_1b:6 qwen3_0_6b:4", then
#               the rest (deepseek_v3 alone: 3.5 minutes, 1.8 of them writing its 28 GB)
#   HF_KEEP_WEIGHTS=1  keep each dense model's folder in WORK, and reuse one that holds the same
#               weights (make-weights --reuse): a model's rows split over several calls (OPTIMS=eager,
#               then OPTIMS=fast) make its weights once
#   HF_STORE_DTYPE=auto  weights file dtype of the dense and released-config models (make-weights
#               --store-dtype: auto = fp32 unless that exceeds 32 GiB, then bf16-rounded values,
#               which an fp32 run upcasts exactly on both sides)
#   OPTIMS="eager fast"  llmprof's implementations checked: `eager` (runtime=eager's presets, every
#               switch off) and `fast` (runtime=fast's presets, CUDA-graph decode steps over
#               KV_BUCKET slots a window: what a run uses; docs/fast-path.md); each gets its own
#               rows ("decoder fast fp32", ...)
#   KV_BUCKET=16  KV slots per captured decode window of the fast rows (SEQ + GREEDY tokens must
#               span several windows for the check to cover moving between them)
#   REPORT_DIR  if set, table.md, timings.txt, results.jsonl and logs/ are copied there at the end
#               (on the device machine: REPORT_DIR=$OUT; the weights are never copied)
# Exit status: 0 when every fp32 bound holds, 1 when one fails, 2 when a step could not run.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

: "${LLMPROF:?set LLMPROF to the llmprof command (binary path, with its library path)}"
WORK=${1:-/tmp/llmprof-verify}
if [ -z "${PYTHON:-}" ]; then
  if [ -x /opt/torch/.venv/bin/python ]; then PYTHON=/opt/torch/.venv/bin/python; else PYTHON=python3; fi
fi
SEED=${SEED:-0}; SEQ=${SEQ:-64}; GREEDY=${GREEDY:-64}; SAM_SIZES=${SAM_SIZES:-"1024 512"}
DEC_ARGS=${DEC_ARGS:-}; SAM_ARGS=${SAM_ARGS:-}; EXPERTS_IMPL=${EXPERTS_IMPL:-grouped_mm}
GATE_BF16=${GATE_BF16:-0}
OPTIMS=${OPTIMS-"eager fast"}; KV_BUCKET=${KV_BUCKET:-16}
[ "$(echo $OPTIMS | wc -w)" -gt 0 ] || { echo "OPTIMS is empty: name eager, fast or both"; exit 2; }
for o in $OPTIMS; do
  case $o in eager|fast) ;; *) echo "OPTIMS: unknown implementation '$o' (eager or fast)"; exit 2 ;; esac
done
# optim_tags OPT: sets sfx (file-name suffix) and tag (row-name infix) for an implementation;
# eager keeps the names the check had before fast rows existed.
optim_tags() { if [ "$1" = fast ]; then sfx=_fast; tag=" fast"; else sfx=; tag=; fi; }
PYDEV=(); [ -n "${PYDEVICE:-}" ] && PYDEV=(--device "$PYDEVICE")
V="$PYTHON scripts/verify_vs_hf.py"

mkdir -p "$WORK/logs" "$WORK/ours" "$WORK/ref"
REC="$WORK/results.jsonl"; : > "$REC"; : > "$WORK/timings.txt"
T_ALL=$(date +%s.%N)
broken=0

# step NAME CMD...: runs CMD with its output in logs/NAME.log, prints the time; a failing
# step prints its log tail and marks the run broken (exit 2 at the end).
step() {
  local name=$1; shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  "$@" >"$WORK/logs/$name.log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  local dt; dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  printf '%-28s %7ss  rc=%d\n' "$name" "$dt" "$rc" | tee -a "$WORK/timings.txt"
  if [ $rc -ne 0 ]; then
    echo "---- $name failed; last lines of $WORK/logs/$name.log:"; tail -n 25 "$WORK/logs/$name.log"; echo "----"
    broken=1
  fi
  return $rc
}

# cmp NAME GATING ARGS...: one compare line set; its verdict lands in the record.
cmp() {
  local name=$1 gating=$2; shift 2
  local extra=(); [ "$gating" = 1 ] || extra=(--no-gate)
  $V compare --name "$name" --record "$REC" "${extra[@]}" "$@" 2>&1 | tee -a "$WORK/logs/compare.log" | sed 's/^/  /'
}

# ours_logits STEP WEIGHTS IDS STEM: llmprof's logits and greedy ids for each implementation and
# dtype, written to STEM<sfx>_<dtype>.safetensors by steps named STEP<sfx>-<dtype>.
ours_logits() {
  local name=$1 weights=$2 ids=$3 stem=$4 opt dt
  for opt in $OPTIMS; do
    optim_tags "$opt"
    for dt in fp32 bf16; do
      step "$name$sfx-$dt" $LLMPROF debug logits --weights "$weights" --ids "$ids" --dtype "$dt" \
        --greedy "$GREEDY" --optim "$opt" --kv-bucket "$KV_BUCKET" --out "$stem${sfx}_$dt.safetensors"
    done
  done
}

# cmp_logits NAME OURS REF: the gating fp32 row and the bf16 row of one implementation's logits
# (OURS_<dtype>.safetensors) against the reference's (REF_<dtype>.safetensors).
cmp_logits() {
  local name=$1 o=$2 r=$3
  [ -s "${o}_fp32.safetensors" ] && [ -s "${r}_fp32.safetensors" ] && \
    cmp "$name fp32" 1 --ours "${o}_fp32.safetensors" --ref "${r}_fp32.safetensors" \
      --key prompt_last_logits --greedy-key greedy_ids --max-rel 1e-4 --min-greedy "$GREEDY"
  [ -s "${o}_bf16.safetensors" ] && [ -s "${r}_bf16.safetensors" ] && \
    cmp "$name bf16" "$BF16GATE" --ours "${o}_bf16.safetensors" --ref "${r}_bf16.safetensors" \
      --key prompt_last_logits --greedy-key greedy_ids --max-rel 2e-2
}

echo "== llmprof vs HF transformers: out=$WORK python=$PYTHON"
$PYTHON -c 'import torch, transformers, safetensors; print(f"torch {torch.__version__}, transformers {transformers.__version__}, safetensors {safetensors.__version__}, cuda {torch.cuda.is_available()}")' \
  || { echo "python environment unusable"; exit 2; }
BF16GATE=$GATE_BF16

step make-inputs $V make-inputs --out "$WORK/inputs" --seq "$SEQ" --seed "$SEED" --size $SAM_SIZES

if [ "${SKIP_DECODER:-0}" != 1 ]; then
  # ---- decoder: fp32 weights on local disk (about 12 GB at full size)
  if step dec-make-weights $V make-weights --out "$WORK/dec" --part decoder --seed "$SEED" "${PYDEV[@]}" $DEC_ARGS; then
    ours_logits dec-ours "$WORK/dec/model.safetensors" "$WORK/inputs/ids.json" "$WORK/ours/logits"
    step dec-ref-fp32+bf16 $V reference-logits --dir "$WORK/dec" --ids "$WORK/inputs/ids.json" --dtype fp32,bf16 \
      --greedy "$GREEDY" --experts-impl "$EXPERTS_IMPL" --out "$WORK/ref/logits_{dtype}.safetensors" "${PYDEV[@]}"
    R=$WORK/ref
    for opt in $OPTIMS; do
      optim_tags "$opt"
      O=$WORK/ours/logits$sfx
      cmp_logits "decoder$tag" "$O" "$R/logits"
      # Scale of bf16 error: ours-bf16 and HF-bf16, each against the HF fp32 reference.
      [ -s "${O}_bf16.safetensors" ] && [ -s "$R/logits_bf16.safetensors" ] && [ -s "$R/logits_fp32.safetensors" ] && \
        cmp "  ours$tag bf16 vs HF fp32" 0 --ours "${O}_bf16.safetensors" --ref "$R/logits_fp32.safetensors" \
          --key prompt_last_logits --greedy-key greedy_ids
    done
    [ -s "$R/logits_bf16.safetensors" ] && [ -s "$R/logits_fp32.safetensors" ] && \
      cmp "  HF bf16 vs HF fp32" 0 --ours "$R/logits_bf16.safetensors" --ref "$R/logits_fp32.safetensors" \
        --key prompt_last_logits --greedy-key greedy_ids
  fi
fi

DENSE_PRESETS=${DENSE_PRESETS-"qwen2_5_0_5b qwen2_5_7b llama3_1_8b"}
DENSE_LAYERS=${DENSE_LAYERS-4}
HF_CONFIGS=${HF_CONFIGS-"qwen3_0_6b:4 mistral_7b_v0_3:4 mixtral_8x7b:2 qwen3_30b_a3b:2 phi3_mini_4k:4 gemma3_1b:6 deepseek_v2_lite:2:1 deepseek_v3:2:1"}
HF_STORE_DTYPE=${HF_STORE_DTYPE:-auto}; HF_KEEP_WEIGHTS=${HF_KEEP_WEIGHTS:-0}
D="$PYTHON scripts/dense_hf.py"

# dense_rows NAME MAKE-WEIGHTS-ARGS...: one dense decoder model against transformers' class of
# its model_type (scripts/dense_hf.py): seeded weights in $WORK/NAME, llmprof's logits (each
# implementation, fp32 and bf16), the reference's, the rows; then the weights folder goes (disk),
# its config.json and weights_meta.json kept under logs/ (HF_KEEP_WEIGHTS=1 keeps the folder).
dense_rows() {
  local name=$1 W=$WORK/$1; shift
  local reuse=(); [ "$HF_KEEP_WEIGHTS" = 1 ] && reuse=(--reuse)
  if step "$name-make-weights" $D make-weights "$@" --out "$W" --seed "$SEED" --seq "$SEQ" \
      --store-dtype "$HF_STORE_DTYPE" "${reuse[@]}"; then
    cp "$W/config.json" "$WORK/logs/$name-config.json"; cp "$W/weights_meta.json" "$WORK/logs/$name-weights_meta.json"
    ours_logits "$name-ours" "$W" "$W/ids.json" "$WORK/ours/$name"
    step "$name-ref" $D reference-logits --dir "$W" --ids "$W/ids.json" --dtype fp32,bf16 --greedy "$GREEDY" \
      --experts-impl "$EXPERTS_IMPL" --out "$WORK/ref/${name}_{dtype}.safetensors" ${PYDEVICE:+--device "$PYDEVICE"}
    local R=$WORK/ref/$name O
    for opt in $OPTIMS; do
      optim_tags "$opt"
      O=$WORK/ours/$name$sfx
      cmp_logits "$name$tag" "$O" "$R"
      [ -s "${O}_bf16.safetensors" ] && [ -s "${R}_fp32.safetensors" ] && \
        cmp "  $name ours$tag bf16 vs HF fp32" 0 --ours "${O}_bf16.safetensors" --ref "${R}_fp32.safetensors" \
          --key prompt_last_logits --greedy-key greedy_ids
    done
    [ -s "${R}_bf16.safetensors" ] && [ -s "${R}_fp32.safetensors" ] && \
      cmp "  $name HF bf16 vs HF fp32" 0 --ours "${R}_bf16.safetensors" --ref "${R}_fp32.safetensors" \
        --key prompt_last_logits --greedy-key greedy_ids
  fi
  [ "$HF_KEEP_WEIGHTS" = 1 ] || rm -rf "$W"
}

for preset in $DENSE_PRESETS; do
  # ---- dense decoder preset: HF Qwen2ForCausalLM / LlamaForCausalLM vs llmprof's dense family
  LAYERS=(); [ -n "$DENSE_LAYERS" ] && LAYERS=(--layers "$DENSE_LAYERS")
  dense_rows "$preset" --preset "$preset" "${LAYERS[@]}"
done

for spec in $HF_CONFIGS; do
  # ---- a released config (NAME[:LAYERS[:FIRST_DENSE]]): transformers' class of its model_type
  IFS=: read -r name layers first_dense <<< "$spec"
  ARGS=(--config "tests/fixtures/released_configs/$name.json")
  [ -n "$layers" ] && ARGS+=(--layers "$layers")
  [ -n "$first_dense" ] && ARGS+=(--first-dense "$first_dense")
  dense_rows "$name" "${ARGS[@]}"
done

if [ "${SKIP_SAM:-0}" != 1 ]; then
  # ---- SAM encoder at each size, fp32 and bf16
  if step sam-make-weights $V make-weights --out "$WORK/sam" --part sam --seed "$SEED" "${PYDEV[@]}" $SAM_ARGS; then
    PX=()
    for s in $SAM_SIZES; do
      PX+=("$WORK/inputs/pixels_$s.safetensors")
      for opt in $OPTIMS; do
        optim_tags "$opt"
        for dt in fp32 bf16; do
          step "sam-ours$sfx-$s-$dt" $LLMPROF debug sam --weights "$WORK/sam/model.safetensors" --optim "$opt" \
            --pixels "$WORK/inputs/pixels_$s.safetensors" --dtype "$dt" --out "$WORK/ours/sam${sfx}_${s}_$dt.safetensors"
        done
      done
    done
    # fp32-tf32conv: fp32 with TF32 cuDNN convolutions (libtorch's default), a diagnostic only.
    REFDT=fp32,bf16
    $PYTHON -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && REFDT=fp32,fp32-tf32conv,bf16
    [ -n "${PYDEVICE:-}" ] && [ "${PYDEVICE#cuda}" = "$PYDEVICE" ] && REFDT=fp32,bf16
    step sam-ref $V reference-sam --dir "$WORK/sam" --pixels "${PX[@]}" --dtype "$REFDT" \
      --out "$WORK/ref/sam_{size}_{dtype}.safetensors" "${PYDEV[@]}"
    for s in $SAM_SIZES; do
      R=$WORK/ref/sam_$s
      for opt in $OPTIMS; do
        optim_tags "$opt"
        O=$WORK/ours/sam${sfx}_$s
        [ -s "${O}_fp32.safetensors" ] && [ -s "${R}_fp32.safetensors" ] && \
          cmp "sam $s$tag fp32" 1 --ours "${O}_fp32.safetensors" --ref "${R}_fp32.safetensors" --key features --max-rel 1e-4
        [ -s "${O}_fp32.safetensors" ] && [ -s "${R}_fp32-tf32conv.safetensors" ] && \
          cmp "  sam $s ours$tag fp32 vs HF tf32conv" 0 --ours "${O}_fp32.safetensors" --ref "${R}_fp32-tf32conv.safetensors" --key features
        [ -s "${O}_bf16.safetensors" ] && [ -s "${R}_bf16.safetensors" ] && \
          cmp "sam $s$tag bf16" "$BF16GATE" --ours "${O}_bf16.safetensors" --ref "${R}_bf16.safetensors" --key features --max-rel 2e-2
        [ -s "${O}_bf16.safetensors" ] && [ -s "${R}_fp32.safetensors" ] && \
          cmp "  sam $s ours$tag bf16 vs HF fp32" 0 --ours "${O}_bf16.safetensors" --ref "${R}_fp32.safetensors" --key features
      done
      [ -s "${R}_bf16.safetensors" ] && [ -s "${R}_fp32.safetensors" ] && \
        cmp "  sam $s HF bf16 vs HF fp32" 0 --ours "${R}_bf16.safetensors" --ref "${R}_fp32.safetensors" --key features
    done
  fi
fi

echo
echo "== timings (s)"; cat "$WORK/timings.txt"
awk -v a="$T_ALL" -v b="$(date +%s.%N)" 'BEGIN{printf "total %.1f s\n", b-a}' | tee -a "$WORK/timings.txt"
echo
echo "== results ($REC)"
$V table --record "$REC" | tee "$WORK/table.md"
tbl=${PIPESTATUS[0]}
want=0
[ "${SKIP_DECODER:-0}" != 1 ] && want=$((want + 1))
[ "${SKIP_SAM:-0}" != 1 ] && want=$((want + $(echo $SAM_SIZES | wc -w)))
want=$((want + $(echo $DENSE_PRESETS | wc -w) + $(echo $HF_CONFIGS | wc -w)))
want=$((want * $(echo $OPTIMS | wc -w)))  # every gating row once per implementation
have=$(grep -c '"gating": true' "$REC" || true)
if [ -n "${REPORT_DIR:-}" ]; then
  mkdir -p "$REPORT_DIR" && cp -r "$WORK/table.md" "$WORK/timings.txt" "$WORK/results.jsonl" "$WORK/logs" "$REPORT_DIR/"
fi
if [ "$broken" = 1 ] || [ "$have" -lt "$want" ]; then
  echo "RESULT: INCOMPLETE ($have of $want gating fp32 checks ran; see $WORK/logs)"; exit 2
fi
if [ "$tbl" -ne 0 ]; then echo "RESULT: FAIL (a gating bound failed)"; exit 1; fi
echo "RESULT: PASS (all fp32 bounds hold)"; exit 0
