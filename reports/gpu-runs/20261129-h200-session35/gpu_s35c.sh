#!/usr/bin/env bash
# Session 35 call C (2 x H200): #45's checks again after the fix of calls A/B's hang (a rank's
# CUDA graphs, holding NCCL collectives, outlived its communicator: NCCL's abort waited for
# them; DenseModel now drops its decode session first). scripts/verify_tp.sh without parity
# configs: Llama-3.1-8B stage 1 at batch 1 and 32, TP=1 and TP=2, and Llama-3.1-70B's
# configuration (synthetic weights) over 2 ranks; then stage 2 under ncu on rank 1.
source scripts/device_lib.sh
v=/tmp/vtp
s=$(date +%s)
CONFIGS= TP=2 LLMPROF=$L timeout 400 scripts/verify_tp.sh $v > $OUT/verify_tp.out 2>&1
echo "verify_tp rc=$? $(( $(date +%s) - s )) s"
cat $v/table.md
mkdir -p $OUT/vtp
cp $v/*.log $v/table.md $OUT/vtp/ 2>/dev/null
for d in $v/*/; do n=$(basename $d); mkdir -p $OUT/vtp/$n; cp $d/metrics.json $d/report.md $d/modules.md $OUT/vtp/$n/ 2>/dev/null; ls $d > $OUT/vtp/$n/files.txt; done
s=$(date +%s); left=$(( 560 - s + S0 ))
timeout $left $L stage2 model=llama3_1_8b dataset=random_tokens dataset.input_len=256 infer.max_new_tokens=16 runtime.tensor_parallel=2 pipeline.ncu.enable=true pipeline.ncu.rank=1 pipeline.ncu.top_k=3 hydra.run.dir=/tmp/s2 > $OUT/vtp/stage2.log 2>&1
echo "stage2 rank 1 rc=$? $(( $(date +%s) - s )) s (limit $left)"
ls /tmp/s2 > $OUT/vtp/stage2_files.txt 2>&1; cp /tmp/s2/metrics.json $OUT/vtp/stage2_metrics.json 2>/dev/null; cp /tmp/s2/report.md $OUT/vtp/stage2_report.md 2>/dev/null
sed 's/\x1b\[[0-9;]*m//g' $OUT/vtp/stage2.log | grep -E "ERROR|WARN|ncu|succeeded" | cut -c1-250 | tail -8
(cd $OUT && tar czf vtp.tgz vtp && rm -rf vtp)
echo "total $(( $(date +%s) - S0 )) s"
