# Sourced by a session-35 call (2 x H200): #45's failure check on GPUs. A TP=2 stage-1 run whose
# rank 1 worker is killed (SIGKILL) during its timed requests: how long until the front end
# exits, its exit status, status.json's verdict, and that no worker is left.
o="model=llama3_1_8b dataset=random_tokens dataset.input_len=256 infer.max_new_tokens=32 runtime.batch_size=1 runtime.tensor_parallel=2"
$L stage1 $o pipeline.torch_profiler.enable=false hydra.run.dir=/tmp/kill > $OUT/kill.log 2>&1 &
front=$!
for i in $(seq 1 60); do
  sleep 1
  grep -q "request" /tmp/kill/rank1/heartbeat 2>/dev/null && break
done
victim=""
for p in $(pgrep -f llmprof-worker); do
  tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "LLMPROF_TP_RANK=1" && victim=$p
done
echo "rank 1 worker $victim, mark: $(cat /tmp/kill/rank1/heartbeat 2>/dev/null)"
t0=$(date +%s.%N); kill -9 $victim
wait $front; rc=$?
echo "front end rc=$rc $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s after the kill; workers left: $(pgrep -fc llmprof-worker)"
python3 -c "import json; s=json.load(open('/tmp/kill/status.json')); print('status.json:', {k: s[k] for k in s if k in ('status','state','error','failed_rank','reason')})" 2>&1 | cut -c1-400
sed 's/\x1b\[[0-9;]*m//g' $OUT/kill.log | grep -E "ERROR|fix:" | cut -c1-400 | tail -3
