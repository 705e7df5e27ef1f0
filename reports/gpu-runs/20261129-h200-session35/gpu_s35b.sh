#!/usr/bin/env bash
# Session 35 call B (2 x H200): call A's TP=2 stage-1 run stopped inside the Kineto pass (after
# its warm-up pass) and never ended. Here: TP=2 batch 1 without the Kineto pass (does the rest
# end?), then with it in the background: after 75 s each worker's threads (state, CPU time,
# wchan), nvidia-smi's utilisation and, where gdb exists, every thread's stack; the watchdog
# is set to 100 s, so its report on the hung rank is seen too.
source scripts/device_lib.sh
which gdb eu-stack py-spy 2>&1 | head -3
o="model=llama3_1_8b dataset=random_tokens dataset.input_len=256 infer.max_new_tokens=32 runtime.batch_size=1 runtime.tensor_parallel=2 runtime.tensor_parallel_timeout_s=100"
s=$(date +%s); timeout 120 $L stage1 $o pipeline.torch_profiler.enable=false hydra.run.dir=/tmp/np > $OUT/np.log 2>&1
echo "no Kineto rc=$? $(( $(date +%s) - s )) s"; tail -2 $OUT/np.log | cut -c1-200
python3 -c "import json; m=json.load(open('/tmp/np/metrics.json')); print('step', m['stages']['decode_step']['p50_ms'])"
s=$(date +%s); timeout 200 $L stage1 $o hydra.run.dir=/tmp/kp > $OUT/kp.log 2>&1 &
sleep 75
nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader
for p in $(pgrep -f llmprof-worker); do
  echo "== worker $p"; cat /proc/$p/task/*/stat | awk '{print $2, $3, "utime", $14, "stime", $15}' | sort | uniq -c | sort -rn | head -12
  for t in /proc/$p/task/*; do echo "$(cat $t/comm) $(cat $t/wchan)"; done | sort | uniq -c | head -12
  command -v gdb > /dev/null && timeout 60 gdb -p $p -batch -ex "thread apply all bt 25" 2>/dev/null | grep -E "^Thread|^#" | cut -c1-180 > $OUT/gdb_$p.txt
done
find /tmp/kp -name "*heartbeat*" -exec sh -c 'echo "$1: $(cat "$1")"' _ {} \;
wait; echo "with Kineto rc=$? $(( $(date +%s) - s )) s"
sed 's/\x1b\[[0-9;]*m//g' $OUT/kp.log | grep -E "WARN|ERROR|rank|hung|error" | cut -c1-300 | tail -20
echo "total $(( $(date +%s) - S0 )) s"
