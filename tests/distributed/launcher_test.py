#!/usr/bin/env python3
"""launcher_test.py -- how a training job ends, however it is asked to or made to: the signals of
a single process and of the ranks of a job, the netc that launches a job (`--ranks N`) and what
it owns, and a job that survives a lost rank (`--max-restarts`). Slurm is not needed: its
environment and signals are simulated, as tests/distributed/LaunchTest.cpp does for its variables.

Cases (--case; each a CTest test):
  double-sigterm   two SIGTERMs in a row (Slurm's time limit and scancel send two): one clean stop,
                   saved, exit 143, the command that continues it; a second Ctrl-C ends at once and
                   says what is on disk and how to continue from it; SIGHUP stops cleanly (129).
  srun-without-pmix  a task of a simulated 2-task srun step without PMIx: the error says to run
                   srun --mpi=pmix (and nothing waits).
  one-rank-signal  SIGTERM to rank 1 alone of `mpirun -np 2 netc train`: the job stops and saves,
                   exits 143, and the command that continues it starts with `mpirun -np 2`.
  launcher-gone    the netc of `--ranks 2` killed with SIGKILL: no process of the job is left; sent
                   SIGHUP (terminal closed): the ranks stop and save, exit 129, continue with --ranks 2.
  not-joined       rank 1 of mpirun's job is not netc (`true`): rank 0's MPI_Init is bounded by
                   --comm-timeout and says why.
  fake-mpirun      an `mpirun` that exits 0 without starting anything: `--ranks 2` says nothing was
                   trained and exits 1.
  refusal-once     a refusal of every rank under --ranks 2 is printed once, without mpirun's
                   boilerplate; an --out that holds a run is refused before the run header; --gpus 2
                   under mpirun without a GPU is refused, not trained on CPUs.
  accumulate       --accumulate 2 on 2 ranks: the header and the checkpoint say global batch 128,
                   and a resume on 1 rank keeps it (batch 128).
  restart          kill -9 of rank 1 after step 100 of a `--ranks 2 --max-restarts 1 --deterministic
                   --checkpoint-every 100` run: netc restarts it from its checkpoint, and the final
                   checkpoint is byte for byte an undisturbed run's.

The cases that need Open MPI's mpirun exit 77 (a CTest SKIP, with the reason) without it.
Usage: launcher_test.py --netc NETC --source SOURCE_DIR --work WORK_DIR --case CASE
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
NET = "tests/golden/cli/Inputs/tiny-mnist.net"
DATA = "tests/fixtures/mnist-slice"


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def need_mpirun():
    mpirun = shutil.which("mpirun")
    if not mpirun:
        raise Skip("mpirun is not installed (Debian: openmpi-bin; scripts/setup.sh --test installs it)")
    command = [mpirun, "-np", "2", "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    return command


def train_command(args, out, *extra, epochs="100000", batch="2"):
    return [args.netc, "train", os.path.join(args.source, NET), "--data", os.path.join(args.source, DATA),
            "--epochs", epochs, "--batch", batch, "--threads", "1", "--seed", "5", "--init", "xavier",
            "--cost-model", "none", "--progress", "none", "--out", out, *extra]


def wait_for(predicate, what, limit=120):
    deadline = time.time() + limit
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise Failure(f"{what} did not happen within {limit} s")


def start(command, env=None, **kwargs):
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kwargs)


def finish(job, limit=120):
    try:
        out, err = job.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        job.kill()
        out, err = job.communicate()
        raise Failure(f"the process did not end within {limit} s:\n{out}{err}")
    return job.returncode, out, err


def expect(condition, message, out="", err=""):
    if not condition:
        raise Failure(f"{message}\n--- stdout:\n{out}\n--- stderr:\n{err}")


def descendants(pid):
    """Every process below `pid` (by parent links in /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def rank_pid(root, rank):
    """The pid of netc rank `rank` below process `root`."""
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        if name == "netc" and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return pid
    return None


def metrics_lines(out):
    path = os.path.join(out, "metrics.jsonl")
    return open(path).read().count("\n") if os.path.exists(path) else 0


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# ---- the cases ----------------------------------------------------------------------------------


def case_double_sigterm(args):
    out = os.path.join(args.work, "double")
    job = start(train_command(args, out))
    wait_for(lambda: metrics_lines(out) >= 1, "the first epoch's metrics line")
    job.send_signal(signal.SIGTERM)
    time.sleep(0.02)
    job.send_signal(signal.SIGTERM)
    code, stdout, err = finish(job)
    print(err[-1500:])
    expect(code == 143, f"two SIGTERMs: exit {code}, expected 143", stdout, err)
    expect("interrupted again" not in err, "a second SIGTERM ended the run at once", stdout, err)
    expect("saved " in err and "continue with: " in err and "--resume" in err,
           "two SIGTERMs: no checkpoint or continue command reported", stdout, err)

    # Two Ctrl-Cs: at once, saying what is on disk.
    out2 = os.path.join(args.work, "twice")
    job = start(train_command(args, out2))
    wait_for(lambda: metrics_lines(out2) >= 1, "the first epoch's metrics line")
    job.send_signal(signal.SIGINT)
    job.send_signal(signal.SIGINT)
    code, stdout, err = finish(job)
    print(err[-1500:])
    expect(code == 130, f"two Ctrl-Cs: exit {code}, expected 130", stdout, err)
    if "interrupted again: stopped at once" in err:  # the second arrived before the stop was saved
        expect(f"{out2}/last.safetensors holds the run after step" in err and "continue with:" in err,
               "stopped at once, without saying what is on disk", stdout, err)

    # SIGHUP: the terminal closed.
    out3 = os.path.join(args.work, "hangup")
    job = start(train_command(args, out3))
    wait_for(lambda: metrics_lines(out3) >= 1, "the first epoch's metrics line")
    job.send_signal(signal.SIGHUP)
    code, stdout, err = finish(job)
    expect(code == 129 and "saved " in err, f"SIGHUP: exit {code}, expected 129 and a saved run", stdout, err)


def case_srun_without_pmix(args):
    env = dict(os.environ, SLURM_STEP_NUM_TASKS="2", SLURM_PROCID="1", SLURM_NODEID="0",
               SLURM_STEP_TASKS_PER_NODE="2", SLURM_LOCALID="1", SLURM_JOB_ID="42")
    for name in list(env):
        if name.startswith(("OMPI_", "PMIX_", "NETC_")):
            del env[name]
    job = start(train_command(args, os.path.join(args.work, "srun"), "--comm-timeout", "10", epochs="1"), env=env)
    code, stdout, err = finish(job, 120)
    print(err)
    expect(code == 1 and "srun --mpi=pmix" in err and "PMIX_RANK is not set" in err,
           f"a task of srun without PMIx: exit {code}; expected 1 and the hint to run srun --mpi=pmix", stdout, err)


def case_one_rank_signal(args):
    prefix = need_mpirun()
    out = os.path.join(args.work, "one-rank")
    job = start(prefix + train_command(args, out))
    wait_for(lambda: metrics_lines(out) >= 1 and rank_pid(job.pid, 1), "rank 1 training")
    os.kill(rank_pid(job.pid, 1), signal.SIGTERM)
    code, stdout, err = finish(job)
    print(err[-2000:])
    expect(code == 143, f"SIGTERM to rank 1: the job exited {code}, expected 143", stdout, err)
    expect("continue with: mpirun -np 2 " in err, "the continue command lacks `mpirun -np 2`", stdout, err)


def case_launcher_gone(args):
    need_mpirun()
    out = os.path.join(args.work, "killed-launcher")
    job = start(train_command(args, out, "--ranks", "2"), start_new_session=True)
    wait_for(lambda: metrics_lines(out) >= 1 and rank_pid(job.pid, 1), "the job training")
    job_processes = descendants(job.pid)
    job.kill()
    job.communicate()
    deadline = time.time() + 60
    while time.time() < deadline and any(alive(p) for p in job_processes):
        time.sleep(0.1)
    left = [p for p in job_processes if alive(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    expect(not left, f"the launcher was killed with SIGKILL, but {len(left)} process(es) of its job ran on")
    print(f"SIGKILL of the launcher: its {len(job_processes)} processes ended")

    out2 = os.path.join(args.work, "hangup-launcher")
    job = start(train_command(args, out2, "--ranks", "2"), start_new_session=True)
    wait_for(lambda: metrics_lines(out2) >= 1 and rank_pid(job.pid, 1), "the job training")
    job.send_signal(signal.SIGHUP)
    code, stdout, err = finish(job)
    print(err[-1500:])
    expect(code == 129, f"SIGHUP to the launcher: exit {code}, expected 129", stdout, err)
    expect("saved " in err and "--ranks 2" in err.split("continue with:")[-1],
           "SIGHUP to the launcher: no save, or a continue command without --ranks 2", stdout, err)
    expect("Forwarding signal" not in err, "mpirun's note on forwarding passed through", stdout, err)


def case_not_joined(args):
    mpirun = need_mpirun()[0]
    out = os.path.join(args.work, "not-joined")
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    command = [mpirun, *root, "--oversubscribe", "-np", "1", *train_command(args, out, "--comm-timeout", "5"),
               ":", "-np", "1", "true"]
    started = time.time()
    code, stdout, err = finish(start(command), 180)
    print(f"ended after {time.time() - started:.1f} s, exit {code}\n{err[-1500:]}")
    expect(code != 0 and "joining the job (MPI_Init) did not complete within --comm-timeout 5 s" in err,
           "rank 0 of a job whose rank 1 never joined", stdout, err)


def case_fake_mpirun(args):
    fake = os.path.join(args.work, "fake-bin")
    os.makedirs(fake, exist_ok=True)
    with open(os.path.join(fake, "mpirun"), "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(os.path.join(fake, "mpirun"), 0o755)
    env = dict(os.environ, PATH=fake + os.pathsep + os.environ.get("PATH", ""))
    out = os.path.join(args.work, "fake")
    code, stdout, err = finish(start(train_command(args, out, "--ranks", "2", epochs="1"), env=env))
    print(err)
    expect(code == 1 and "never started netc" in err and "Nothing was trained" in err,
           f"an mpirun that exits 0 at once: exit {code}", stdout, err)


def case_refusal_once(args):
    prefix = need_mpirun()
    out = os.path.join(args.work, "refused")
    code, stdout, err = finish(start(train_command(args, out, "--ranks", "2", "--comm-timeout", "0", epochs="1")))
    print(err)
    expect(code == 2 and err.count("netc: error:") == 1, f"a refusal of both ranks: exit {code}, printed "
           f"{err.count('netc: error:')} time(s)", stdout, err)
    expect("Primary job" not in err and "mpirun detected" not in err, "mpirun's boilerplate passed through",
           stdout, err)
    # An --out that already holds a run: refused before the run header is printed.
    held = os.path.join(args.work, "held")
    code, stdout, err = finish(start(train_command(args, held, epochs="1")))
    expect(code == 0, f"the first run into {held} failed", stdout, err)
    code, stdout, err = finish(start(train_command(args, held, "--ranks", "2", epochs="1")))
    print(err)
    expect(code == 1 and "already holds a run" in err and "network tiny-mnist" not in stdout and
           err.count("netc: error:") == 1,
           f"--ranks 2 into a folder that holds a run: exit {code}, or a header or a second error", stdout, err)
    # --gpus 2 under mpirun on a machine without a usable GPU: refused, not trained on the CPU.
    code, stdout, err = finish(start(prefix + train_command(args, os.path.join(args.work, "gpus"), "--gpus", "2",
                                                            epochs="1")))
    print(err[-1500:])
    expect(code != 0 and "epoch   1" not in stdout, f"--gpus 2 under mpirun without a GPU: exit {code}",
           stdout, err)


def checkpoint_metadata(path):
    import json
    import struct
    with open(path, "rb") as f:
        head = f.read(8)
        return json.loads(f.read(struct.unpack("<Q", head)[0]))["__metadata__"]


def case_accumulate(args):
    need_mpirun()
    out = os.path.join(args.work, "accumulate")
    code, stdout, err = finish(start(train_command(args, out, "--ranks", "2", "--accumulate", "2", epochs="1",
                                                   batch="32")))
    expect(code == 0 and "global batch 128 (2 × --batch 32 × --accumulate 2)" in stdout,
           f"--accumulate 2 on 2 ranks: exit {code}, header without the global batch of 128", stdout, err)
    meta = checkpoint_metadata(os.path.join(out, "last.safetensors"))
    expect(meta.get("global_batch") == "128", f"the checkpoint's global_batch is {meta.get('global_batch')}")
    command = train_command(args, out, epochs="2")
    command.remove("--batch")
    command.remove("2")
    code, stdout, err = finish(start([*command, "--resume", os.path.join(out, "last.safetensors")]))
    expect(code == 0 and "batch 128," in stdout, f"resumed on 1 rank: exit {code}, not batch 128", stdout, err)
    print("global batch 128 recorded and kept on a resume on 1 rank")


def case_restart(args):
    need_mpirun()
    common = ["--deterministic", "--checkpoint-every", "100", "--ranks", "2"]
    straight = os.path.join(args.work, "straight")
    code, stdout, err = finish(start(train_command(args, straight, *common, epochs="40", batch="4")), 600)
    expect(code == 0, f"the undisturbed run failed: exit {code}", stdout, err)
    restarted = os.path.join(args.work, "restarted")
    job = start(train_command(args, restarted, *common, "--max-restarts", "1", epochs="40", batch="4"))
    # Rank 1 dies once the first checkpoint (step 100) is on disk.
    wait_for(lambda: os.path.exists(os.path.join(restarted, "last.safetensors")) and rank_pid(job.pid, 1),
             "the first checkpoint")
    os.kill(rank_pid(job.pid, 1), signal.SIGKILL)
    code, stdout, err = finish(job, 600)
    print(err[-2000:])
    expect(code == 0, f"the restarted run: exit {code}", stdout, err)
    expect("netc: restart 1 of 1: rank 1 (" in err and "was killed by signal 9" in err and "continuing from " in err,
           "no restart was reported", stdout, err)
    with open(os.path.join(straight, "last.safetensors"), "rb") as a, \
            open(os.path.join(restarted, "last.safetensors"), "rb") as b:
        expect(a.read() == b.read(), "the restarted run's last.safetensors differs from the undisturbed run's")
    print("the restarted run's last.safetensors is byte for byte the undisturbed run's")


CASES = {"double-sigterm": case_double_sigterm, "srun-without-pmix": case_srun_without_pmix,
         "one-rank-signal": case_one_rank_signal, "launcher-gone": case_launcher_gone,
         "not-joined": case_not_joined, "fake-mpirun": case_fake_mpirun, "refusal-once": case_refusal_once,
         "accumulate": case_accumulate, "restart": case_restart}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--netc", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    try:
        CASES[args.case](args)
    except Skip as e:
        print(f"SKIP: {e}")
        return SKIP
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    print(f"launcher_test {args.case}: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
