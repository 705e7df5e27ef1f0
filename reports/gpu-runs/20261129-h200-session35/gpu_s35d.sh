#!/usr/bin/env bash
# Session 35 call D (2 x H200): stage 2 under ncu on rank 1 again, its ncu files brought back:
# call C's run wrote roofline_ncclCommInitRank.svg, a stage named after an NCCL call.
source scripts/device_lib.sh
s=$(date +%s)
timeout 300 $L stage2 model=llama3_1_8b dataset=random_tokens dataset.input_len=256 infer.max_new_tokens=16 runtime.tensor_parallel=2 pipeline.ncu.enable=true pipeline.ncu.rank=1 pipeline.ncu.top_k=3 hydra.run.dir=/tmp/s2 > $OUT/stage2.log 2>&1
echo "stage2 rank 1 rc=$? $(( $(date +%s) - s )) s"
mkdir -p $OUT/s2; cd /tmp/s2
find . -maxdepth 3 -type f -size -3M \( -name "*.md" -o -name "*.csv" -o -name "*.json" -o -name "*.txt" -o -name "*.svg" -o -name "*.log" \) ! -name "trace*.json" | tar czf $OUT/s2.tgz -T -
find . -maxdepth 3 | head -60
grep -h "ncclCommInitRank" -r . --include=*.csv | head -3 | cut -c1-600
