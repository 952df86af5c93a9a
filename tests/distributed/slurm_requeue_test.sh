#!/usr/bin/env bash
# slurm_requeue_test.sh -- the requeue pattern of examples/slurm/train-requeue.sbatch
# (docs/distributed.md, "Restarts and requeueing") without Slurm: stand-ins
# for srun (it runs its command as the one task of a step, with the variables
# srun --mpi=pmix sets) and scontrol (it records what it was asked). The job
# is sent SIGUSR1 in the middle of its run, as Slurm's --signal=USR1@60 does:
# netc stops cleanly and saves, the script exits 138 and requeues the job;
# run again, as Slurm does with a requeued job, the script resumes the run,
# which must end with a last.safetensors byte for byte an undisturbed run's.
# Usage: slurm_requeue_test.sh NETC SOURCE_DIR WORK_DIR
set -euo pipefail
netc=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work/bin"
ln -s "$netc" "$work/bin/netc"
cat > "$work/bin/srun" <<'SRUN'
#!/usr/bin/env bash
# srun --mpi=pmix COMMAND...: one task of a step, as the real srun would start it.
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
export SLURM_STEP_NUM_TASKS=1 SLURM_PROCID=0 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=1 SLURM_LOCALID=0 PMIX_RANK=0
exec "$@"
SRUN
cat > "$work/bin/scontrol" <<'SCONTROL'
#!/usr/bin/env bash
echo "$*" >> "$WORK/scontrol.log"
SCONTROL
chmod +x "$work/bin/srun" "$work/bin/scontrol"
export PATH="$work/bin:$PATH" WORK="$work" SLURM_JOB_ID=4242 NETWORK="$src/tests/golden/cli/Inputs/tiny-mnist.net"
export DATA="$src/tests/fixtures/mnist-slice" EPOCHS=200
script="$src/examples/slurm/train-requeue.sbatch"

# The undisturbed run.
OUT="$work/straight" bash "$script" > "$work/straight.log" 2>&1 || { echo "FAIL: the undisturbed run"; cat "$work/straight.log"; exit 1; }

# The first run, stopped by Slurm's SIGUSR1 after its first epochs.
OUT="$work/run" bash "$script" > "$work/first.log" 2>&1 &
job=$!
for _ in $(seq 1200); do
  [[ -s $work/run/metrics.jsonl ]] && [[ $(wc -l < "$work/run/metrics.jsonl") -ge 3 ]] && break
  sleep 0.05
done
task=$(pgrep -P "$job" -x netc || true)
[[ -n $task ]] || { echo "FAIL: the job ended before it could be signalled"; cat "$work/first.log"; exit 1; }
kill -USR1 "$task"
set +e
wait "$job"
status=$?
set -e
[[ $status == 138 ]] || { echo "FAIL: the signalled job exited $status, not 138"; cat "$work/first.log"; exit 1; }
grep -qx "requeue 4242" "$work/scontrol.log" || { echo "FAIL: the job was not requeued"; exit 1; }
grep -q "saved .*run/last.safetensors" "$work/first.log" || { echo "FAIL: nothing saved"; cat "$work/first.log"; exit 1; }
echo "ok: SIGUSR1 stopped the run ($(grep 'interrupted' "$work/first.log")), the job was requeued"

# The requeued job: resumed, to the end.
OUT="$work/run" bash "$script" > "$work/second.log" 2>&1 || { echo "FAIL: the requeued run"; cat "$work/second.log"; exit 1; }
grep -q "resumed from .*run/last.safetensors" "$work/second.log" || { echo "FAIL: the requeued job did not resume"; cat "$work/second.log"; exit 1; }
cmp "$work/straight/last.safetensors" "$work/run/last.safetensors" ||
  { echo "FAIL: the requeued run's last.safetensors differs from the undisturbed run's"; exit 1; }
echo "slurm_requeue_test: passed"
