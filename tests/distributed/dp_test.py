#!/usr/bin/env python3
"""dp_test.py -- data-parallel training end to end: `netc train` as 2 ranks, started by Open MPI's
mpirun and by `netc train --ranks 2`, on digits of the committed slice (tests/fixtures/mnist-slice).

Cases (--case; each a CTest test):
  equivalence   2 ranks x --batch 32 give the weights (and momentum) of 1 rank x --batch 64 after
                2 epochs, max |difference| <= 1e-5, on --network mnist (the seed network), lenet5 or
                pool-norm-where (max pooling, response normalization, a `where` bundle); --samples
                256 (4 whole steps an epoch), 200 (a last step of 8) or 193 (a last step of 1 sample,
                so rank 1's share of it is empty); --launcher mpirun or ranks.
  local-sgd     --sync local-sgd:1 equals synchronous training (2 ranks), max |difference| <= 1e-5.
  deterministic --deterministic gives bit-identical weights and optimizer state on 1, 2 and 4 ranks at
                the same global batch (64, on 200 samples: a short last step), on --network; 3 ranks
                are refused, naming the rank counts that can share its chunks.
  resume        a run of 2 ranks resumed on 1 and one of 1 resumed on 2 continue the same global
                order: after 2 epochs their weights equal an uninterrupted run's (<= 1e-5); the
                per-rank batch becomes the global one divided by the ranks, and a global batch that
                the ranks cannot share is refused, naming the rank counts that can; a job stopped in
                the middle of an epoch (SIGINT to `netc train --ranks 2`) resumes on 1 rank.
  frozen        a rank stopped with SIGSTOP: with --comm-timeout 5 the other exits non-zero with
                netc's message naming the missing rank, the operation and the step, and the job ends.
  killed        a rank killed with SIGKILL ends the job (mpirun), and netc says which rank died; the
                checkpoint on disk is whole.
  mismatch      a rank whose network file, --lr or data differs is refused before the first step,
                the difference named once (by rank 0).
  calibrate     netc calibrate --ranks 2 stores the link's all-reduces from 1 KiB to 16 MiB and a
                profile of 2 ranks at once, and netc estimate prices the seed network's gradient
                all-reduce from those points exactly as the cost model says (written again here).
  no-mpi        netc does not link libmpi; with it hidden (a private mount namespace), one process
                trains and 2 ranks say that MPI is missing.

Needs mpirun and numpy (Debian: openmpi-bin, python3-numpy: scripts/setup.sh --test installs them); exits 77
(a CTest SKIP, with the reason) when mpirun is missing, when this machine cannot run 2 processes, or
(no-mpi) when it cannot make a mount namespace.

Usage: dp_test.py --netc NETC --source SOURCE_DIR --work WORK_DIR --case CASE [options]
"""

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import numpy as np  # noqa: E402

from one_step_test import read_checkpoint, read_idx, write_idx  # noqa: E402

SKIP = 77
TOLERANCE = 1e-5
NETWORKS = {"mnist": "examples/mnist.net", "lenet5": "examples/lenet5.net",
            "pool-norm-where": "tests/distributed/pool-norm-where.net"}
# Every run: the same seed, Xavier initialisation, SGD with momentum (--lr is each case's), shuffling
# on (the global order matters), inputs scaled to [0, 1], one thread per rank.
COMMON = ["--momentum", "0.9", "--init", "xavier", "--seed", "3",
          "--normalize", "scale:255", "--threads", "1", "--progress", "none"]


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def mpirun_prefix(ranks):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        raise Skip("mpirun is not installed (Debian: openmpi-bin; scripts/setup.sh --test installs it)")
    command = [mpirun, "-np", str(ranks), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    return command


def make_data(args, folder, count):
    """A data folder with the first `count` training digits of the slice and its 100 test digits."""
    fixture = os.path.join(args.source, "tests", "fixtures", "mnist-slice")
    images, (rows, cols) = read_idx(os.path.join(fixture, "train-images-idx3-ubyte"))
    labels, _ = read_idx(os.path.join(fixture, "train-labels-idx1-ubyte"))
    test_images, _ = read_idx(os.path.join(fixture, "t10k-images-idx3-ubyte"))
    test_labels, _ = read_idx(os.path.join(fixture, "t10k-labels-idx1-ubyte"))
    # Interleave the digits (the slice is sorted by digit): every prefix has them all.
    order = np.argsort(np.arange(len(labels)) % 50 * 10 + labels, kind="stable")[:count]
    os.makedirs(folder, exist_ok=True)
    write_idx(folder, "train", images[order], labels[order], rows, cols)
    write_idx(folder, "t10k", test_images, test_labels, rows, cols)
    return folder


def run(command, expect_ok=True, timeout=600, env=None):
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    if expect_ok and result.returncode != 0:
        raise Failure(f"`{' '.join(command)}` exited with {result.returncode}:\n{result.stdout}{result.stderr}")
    return result


def train(args, ranks, launcher, network, data, out, batch, extra=(), epochs=2, lr="0.1"):
    """Runs netc train on `ranks` ranks for `epochs` epochs (a new run in `out` unless `extra` resumes
    one); returns the completed process."""
    net = os.path.join(args.source, NETWORKS[network])
    fresh = [] if "--resume" in extra else ["--overwrite"]
    command = ["train", net, "--data", data, "--out", out, *fresh, "--epochs", str(epochs), "--lr", lr, *COMMON,
               *extra]
    if batch is not None:
        command += ["--batch", str(batch)]
    if ranks == 1:
        return run([args.netc, *command])
    if launcher == "ranks":
        return run([args.netc, *command, "--ranks", str(ranks)])
    return run(mpirun_prefix(ranks) + [args.netc, *command])


def compare(label, out_a, out_b, tolerance=TOLERANCE):
    """Every tensor of the two runs' last.safetensors (weights and optimizer state) within tolerance."""
    _, a = read_checkpoint(os.path.join(out_a, "last.safetensors"))
    _, b = read_checkpoint(os.path.join(out_b, "last.safetensors"))
    if sorted(a) != sorted(b):
        raise Failure(f"{label}: the checkpoints hold different tensors: {sorted(a)} / {sorted(b)}")
    worst, where = 0.0, None
    for name in a:
        difference = float(np.max(np.abs(a[name] - b[name]))) if a[name].size else 0.0
        if difference > worst:
            worst, where = difference, name
    print(f"{label}: {len(a)} tensors, max |difference| {worst:.3g} (in {where}), tolerance {tolerance:g}")
    if not worst <= tolerance:
        raise Failure(f"{label}: max |difference| {worst:.3g} in {where} exceeds {tolerance:g}")
    return worst


def metadata(out):
    meta, _ = read_checkpoint(os.path.join(out, "last.safetensors"))
    return meta


def case_equivalence(args):
    data = make_data(args, os.path.join(args.work, "data"), args.samples)
    one = os.path.join(args.work, "one-rank")
    two = os.path.join(args.work, "two-ranks")
    train(args, 1, None, args.network, data, one, 64)
    result = train(args, 2, args.launcher, args.network, data, two, 32)
    # Rank 0 alone reports: the header names the job and the global batch.
    if "global batch 64 (2 × --batch 32)" not in result.stdout:
        raise Failure(f"the run header does not give the global batch:\n{result.stdout}")
    if result.stdout.count("final: ") != 1:
        raise Failure(f"expected one summary (rank 0's), got:\n{result.stdout}")
    meta = metadata(two)
    if meta.get("world_size") != "2" or meta.get("global_batch") != "64":
        raise Failure(f"the checkpoint records world_size {meta.get('world_size')}, global_batch "
                      f"{meta.get('global_batch')}; expected 2 and 64")
    compare(f"{args.network}, {args.samples} samples, 2 ranks x 32 ({args.launcher}) vs 1 rank x 64", one, two)


def case_local_sgd(args):
    data = make_data(args, os.path.join(args.work, "data"), 256)
    sync = os.path.join(args.work, "sync")
    local = os.path.join(args.work, "local-sgd-1")
    train(args, 2, args.launcher, args.network, data, sync, 32)
    result = train(args, 2, args.launcher, args.network, data, local, 32, ["--sync", "local-sgd:1"])
    if "local SGD: replicas averaged every 1 step(s)" not in result.stdout:
        raise Failure(f"the run header does not name local SGD:\n{result.stdout}")
    compare("--sync local-sgd:1 vs synchronous, 2 ranks", sync, local)


def case_deterministic(args):
    data = make_data(args, os.path.join(args.work, "data"), 200)
    outs = {}
    for ranks in (1, 2, 4):
        outs[ranks] = os.path.join(args.work, f"ranks-{ranks}")
        result = train(args, ranks, args.launcher, args.network, data, outs[ranks], 64 // ranks,
                       ["--deterministic"])
        if "deterministic: 8 chunks of 8 a step" not in result.stdout:
            raise Failure(f"the run header does not name --deterministic:\n{result.stdout}")
    for ranks in (2, 4):
        worst = compare(f"--deterministic, {args.network}: {ranks} ranks x {64 // ranks} vs 1 rank x 64",
                        outs[1], outs[ranks], tolerance=0.0)
        if worst != 0.0:
            raise Failure("--deterministic weights differ")
    refused = run([args.netc, "train", os.path.join(args.source, NETWORKS[args.network]), "--data", data,
                   "--out", os.path.join(args.work, "three"), "--epochs", "1", "--lr", "0.1", *COMMON, "--batch",
                   "21", "--deterministic", "--ranks", "3"], expect_ok=False)
    expected = "--deterministic 8 shares its 8 chunks among the ranks, which 3 ranks cannot: run on 1, 2, 4 or 8 " \
               "ranks"
    if refused.returncode != 2 or expected not in refused.stderr:
        raise Failure(f"--deterministic on 3 ranks: expected exit 2 and '{expected}', got {refused.returncode}:\n"
                      f"{refused.stderr}")
    print("--deterministic on 3 ranks is refused, naming 1, 2, 4 or 8 ranks")


def case_resume(args):
    data = make_data(args, os.path.join(args.work, "data"), 200)
    # 2 ranks -> 1: the first epoch on 2 ranks of 32, the second on 1 rank (batch 64 from the checkpoint).
    straight_one = os.path.join(args.work, "straight-1x64")
    train(args, 1, None, args.network, data, straight_one, 64)
    first = os.path.join(args.work, "first-2x32")
    train(args, 2, args.launcher, args.network, data, first, 32, epochs=1)
    resumed = run([args.netc, "train", os.path.join(args.source, NETWORKS[args.network]), "--data", data,
                   "--resume", os.path.join(first, "last.safetensors"), "--out", first, "--epochs", "2", "--lr", "0.1",
                   *COMMON])
    if "batch 64," not in resumed.stdout:
        raise Failure(f"resumed on 1 rank, the batch is not the global 64:\n{resumed.stdout}")
    compare("2 ranks x 32 for an epoch, resumed on 1 rank, vs 1 rank x 64 straight", straight_one, first)
    # 1 rank -> 2: the first epoch on 1 rank of 64, the second on 2 ranks (batch 32 each).
    straight_two = os.path.join(args.work, "straight-2x32")
    train(args, 2, args.launcher, args.network, data, straight_two, 32)
    second = os.path.join(args.work, "first-1x64")
    train(args, 1, None, args.network, data, second, 64, epochs=1)
    resumed = train(args, 2, args.launcher, args.network, data, second, None,
                    ["--resume", os.path.join(second, "last.safetensors")])
    if "global batch 64 (2 × --batch 32)" not in resumed.stdout:
        raise Failure(f"resumed on 2 ranks, the global batch is not 64:\n{resumed.stdout}")
    compare("1 rank x 64 for an epoch, resumed on 2 ranks, vs 2 ranks x 32 straight", straight_two, second)
    # A global batch the ranks cannot share is refused with the choices.
    odd = os.path.join(args.work, "odd-1x63")
    train(args, 1, None, args.network, data, odd, 63, epochs=1)
    command = ["train", os.path.join(args.source, NETWORKS[args.network]), "--data", data, "--resume",
               os.path.join(odd, "last.safetensors"), "--out", odd, "--epochs", "2", "--lr", "0.1", *COMMON,
               "--ranks", "2"]
    refused = run([args.netc, *command], expect_ok=False)
    expected = "global batch is 63 samples per step, which 2 ranks cannot share equally: run it on 1, 3, 7, 9, " \
               "21 or 63 ranks"
    if refused.returncode != 2 or expected not in refused.stderr or refused.stderr.count(expected) != 1:
        raise Failure(f"a global batch of 63 resumed on 2 ranks: expected exit 2 and once '{expected}', got "
                      f"{refused.returncode}:\n{refused.stderr}")
    print("a global batch of 63 on 2 ranks is refused, naming 1, 3, 7, 9, 21 or 63 ranks")
    case_resume_mid_epoch(args)


def case_resume_mid_epoch(args):
    """SIGINT to `netc train --ranks 2` stops both ranks at one step; the run resumes on 1 rank."""
    data = make_data(args, os.path.join(args.work, "data-500"), 500)
    # --batch 4 on 2 ranks: 63 steps an epoch, time to stop in the middle of one; a learning rate
    # small enough that 378 steps of 8 samples do not amplify rounding beyond the tolerance.
    calm = ["--epochs", "6", "--lr", "0.01", *COMMON]
    straight = os.path.join(args.work, "mid-straight-1x8")
    train(args, 1, None, "mnist", data, straight, 8, epochs=6, lr="0.01")
    stopped = os.path.join(args.work, "mid-stopped")
    net = os.path.join(args.source, NETWORKS["mnist"])
    command = [args.netc, "train", net, "--data", data, "--out", stopped, "--overwrite", *calm, "--batch", "4",
               "--ranks", "2"]
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = os.path.join(stopped, "metrics.jsonl")
    deadline = time.time() + 300
    while time.time() < deadline and job.poll() is None:
        if os.path.exists(metrics) and open(metrics).read().count("\n") >= 1:
            break
        time.sleep(0.05)
    if job.poll() is not None:
        out, err = job.communicate()
        raise Failure(f"the 2-rank run ended before it could be stopped:\n{out}{err}")
    job.send_signal(signal.SIGINT)
    out, err = job.communicate(timeout=300)
    if job.returncode != 130 or "continue with:" not in err:
        raise Failure(f"SIGINT to `netc train --ranks 2`: expected exit 130 and the resume command, got "
                      f"{job.returncode}:\n{out}{err}")
    meta = metadata(stopped)
    print(f"stopped at {meta.get('data_position')} (world_size {meta.get('world_size')}), resuming on 1 rank")
    run([args.netc, "train", net, "--data", data, "--resume", os.path.join(stopped, "last.safetensors"),
         "--out", stopped, *calm])
    compare("2 ranks x 4 stopped by SIGINT, resumed on 1 rank, vs 1 rank x 8 straight", straight, stopped)


def rank_pids(launcher_pid):
    """{rank: pid} of the netc processes below `launcher_pid` (their OMPI_COMM_WORLD_RANK)."""
    children, ranks = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    todo = [launcher_pid]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            todo.append(child)
            try:
                with open(f"/proc/{child}/environ", "rb") as f:
                    env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
                with open(f"/proc/{child}/comm") as f:
                    name = f.read().strip()
            except OSError:
                continue
            if name == "netc" and b"OMPI_COMM_WORLD_RANK" in env:
                ranks[int(env[b"OMPI_COMM_WORLD_RANK"])] = child
    return ranks


def start_long_job(args, launcher, extra=()):
    data = make_data(args, os.path.join(args.work, "data"), 500)
    out = os.path.join(args.work, "out")
    net = os.path.join(args.source, NETWORKS["mnist"])
    command = ["train", net, "--data", data, "--out", out, "--overwrite", "--epochs", "1000", "--lr", "0.1",
               *COMMON, "--batch", "2", *extra]
    command = [args.netc, *command, "--ranks", "2"] if launcher == "ranks" else \
        mpirun_prefix(2) + [args.netc, *command]
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until both ranks are training: rank 0 has written an epoch's metrics.
    deadline = time.time() + 300
    while time.time() < deadline and job.poll() is None:
        metrics = os.path.join(out, "metrics.jsonl")
        if os.path.exists(metrics) and open(metrics).read().count("\n") >= 1:
            pids = rank_pids(job.pid)
            if len(pids) == 2:
                return job, pids, out
        time.sleep(0.05)
    job.kill()
    out_text, err = job.communicate()
    raise Failure(f"the 2-rank job did not start training:\n{out_text}{err}")


def finish(job, pids, limit):
    """Waits (at most `limit` seconds) for the job; then makes sure no rank is left behind."""
    try:
        out, err = job.communicate(timeout=limit)
        return job.returncode, out, err, None
    except subprocess.TimeoutExpired:
        return None, "", "", f"the job did not end within {limit} s"
    finally:
        for pid in pids.values():
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        if job.poll() is None:
            job.kill()
            job.communicate()


def case_frozen(args):
    job, pids, _ = start_long_job(args, args.launcher, ["--comm-timeout", "5"])
    os.kill(pids[1], signal.SIGSTOP)
    stopped_at = time.time()
    code, out, err, hang = finish(job, pids, 120)
    if hang:
        raise Failure(f"rank 1 was stopped with SIGSTOP: {hang} (it hangs)")
    took = time.time() - stopped_at
    print(f"the job ended {took:.1f} s after rank 1 was stopped, exit {code}")
    print(err[-3000:])
    needed = ["rank 0 of 2: the ", "rank 1 did not answer", "at step ", "did not complete within --comm-timeout 5 s"]
    missing = [text for text in needed if text not in err]
    if code == 0 or missing:
        raise Failure(f"expected a non-zero exit and netc's message with {missing}; exit {code}:\n{err}")


def case_killed(args):
    job, pids, out = start_long_job(args, args.launcher)
    os.kill(pids[1], signal.SIGKILL)
    code, _, err, hang = finish(job, pids, 120)
    if hang:
        raise Failure(f"rank 1 was killed with SIGKILL: {hang} (it hangs)")
    print(f"exit {code}\n{err[-3000:]}")
    if code == 0:
        raise Failure("the job whose rank 1 was killed exited 0")
    said = "netc: error: rank 1 (" if args.launcher == "ranks" else "process rank 1 with PID"
    if said not in err or "exited on signal 9" not in err:
        raise Failure(f"no message says that rank 1 was killed (looked for '{said}'):\n{err}")
    evaluates(args, out)


def evaluates(args, out):
    """Rank 0's checkpoint on disk in `out` is whole: netc eval reads it."""
    last = os.path.join(out, "last.safetensors")
    run([args.netc, "eval", os.path.join(args.source, NETWORKS["mnist"]), "--weights", last, "--data",
         os.path.join(args.work, "data")])
    print(f"{last} is whole: netc eval reads it")


def case_mismatch(args):
    data = make_data(args, os.path.join(args.work, "data"), 64)
    mnist = os.path.join(args.source, NETWORKS["mnist"])
    lenet = os.path.join(args.source, NETWORKS["lenet5"])
    out = os.path.join(args.work, "out")
    base = ["--out", out, "--overwrite", "--epochs", "2", *COMMON, "--batch", "8"]
    usual = ["--data", data, "--lr", "0.1", *base]
    cases = [
        ("another network file", [mnist, *usual], [lenet, *usual],
         "rank 1 of 2 differs from rank 0: its network is"),
        ("another --lr", [mnist, *usual], [mnist, "--data", data, "--lr", "0.05", *base],
         "rank 1 of 2 differs from rank 0: its --lr is 0.05, rank 0's is 0.1"),
        ("missing data", [mnist, *usual], [mnist, "--data", os.path.join(args.work, "nowhere"), "--lr", "0.1", *base],
         "rank 1 of 2: "),
    ]
    for label, rank0, rank1, expected in cases:
        shutil.rmtree(out, ignore_errors=True)
        command = mpirun_prefix(1) + [args.netc, "train", *rank0, ":", "-np", "1", args.netc, "train", *rank1]
        result = run(command, expect_ok=False)
        if result.returncode == 0 or expected not in result.stderr or "epoch   1" in result.stdout:
            raise Failure(f"{label} on rank 1: expected a refusal before the first step saying '{expected}', "
                          f"got exit {result.returncode}:\n{result.stdout}{result.stderr}")
        if result.stderr.count("netc: error:") != 1:
            raise Failure(f"{label}: the agreed error should be printed once (by rank 0):\n{result.stderr}")
        if os.path.exists(os.path.join(out, "last.safetensors")):
            raise Failure(f"{label}: a refused job wrote a checkpoint")
        print(f"{label} on rank 1: refused before training: "
              f"{[line for line in result.stderr.splitlines() if 'netc: error' in line][0]}")


def case_no_mpi(args):
    with open(args.netc, "rb") as f:
        if b"libmpi.so" in f.read():
            raise Failure(f"{args.netc} names libmpi.so: it must load MPI only through its plugin")
    print("netc does not link libmpi")
    library = None
    for folder in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"):
        candidate = os.path.join(folder, "libmpi.so.40")
        if os.path.exists(candidate):
            library = os.path.realpath(candidate)
            break
    if library is None:
        raise Skip("libmpi.so.40 is not installed, so there is nothing to hide")
    unshare = shutil.which("unshare")
    probe = run([unshare, "-m", "true"], expect_ok=False) if unshare else None
    if not unshare or probe.returncode != 0:
        raise Skip("this machine cannot make a private mount namespace (unshare -m; root is needed)")
    data = make_data(args, os.path.join(args.work, "data"), 64)
    out = os.path.join(args.work, "out")
    train_command = " ".join(["'" + word + "'" for word in [
        args.netc, "train", os.path.join(args.source, NETWORKS["mnist"]), "--data", data, "--out", out,
        "--overwrite", "--epochs", "1", "--lr", "0.1", *COMMON, "--batch", "8"]])
    # Inside the namespace libmpi is an empty file: loading it fails as on a machine without MPI.
    fake_rank = "OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=2 " \
                "OMPI_COMM_WORLD_LOCAL_RANK=0"
    script = f"mount --bind /dev/null {library} && {train_command} && echo ONE-PROCESS-TRAINED && " \
             f"{{ env {fake_rank} {train_command}; echo TWO-RANKS-EXIT=$?; }}"
    result = run([unshare, "-m", "sh", "-c", script], expect_ok=False)
    print(result.stdout[-2000:], result.stderr[-2000:])
    if "ONE-PROCESS-TRAINED" not in result.stdout or "final: " not in result.stdout:
        raise Failure(f"with libmpi hidden, one process did not train:\n{result.stdout}{result.stderr}")
    if "TWO-RANKS-EXIT=1" not in result.stdout or "but MPI could not be loaded" not in result.stderr:
        raise Failure(f"with libmpi hidden, 2 ranks should say that MPI is missing:\n{result.stdout}{result.stderr}")


def link_all_reduce_us(link, size, ranks):
    """The cost model's all-reduce (codegen/CostTable.cpp), written again: the ring line times the
    measured-to-modelled ratio of the link's points, linear in log(size) between them."""
    def line(n, r):
        return 2 * (r - 1) * link["alpha_us"] + 2 * (r - 1) / r * n / link["bytes_per_second"] * 1e6
    points = link.get("all_reduce", [])
    ratios = [(p["bytes"], p["us"] / line(p["bytes"], p["ranks"])) for p in points]
    if not ratios:
        return line(size, ranks)
    if size <= ratios[0][0]:
        return line(size, ranks) * ratios[0][1]
    if size >= ratios[-1][0]:
        return line(size, ranks) * ratios[-1][1]
    for (low, r_low), (high, r_high) in zip(ratios, ratios[1:]):
        if low <= size <= high:
            f = math.log(size / low) / math.log(high / low)
            return line(size, ranks) * (r_low + f * (r_high - r_low))
    raise Failure("the link's points are not by increasing size")


def case_calibrate(args):
    """netc calibrate over 2 ranks measures the link's all-reduces at every size, and netc estimate
    prices the seed network's one gradient bucket from those points."""
    mpirun_prefix(2)  # skips loudly without mpirun, which --ranks starts
    table = os.path.join(args.work, "table.json")
    run([args.netc, "calibrate", "--ranks", "2", "--threads-list", "1", "--iterations", "1", "--rounds", "1",
         "-o", table, "-q"])
    with open(table) as f:
        data = json.load(f)
    link = data["links"]["intra-node"]
    points = link.get("all_reduce")
    if not points:
        raise Failure(f"the intra-node link of a 2-rank calibration has no measured all-reduces: {link}")
    sizes = [p["bytes"] for p in points]
    if sizes != [1024 * 4 ** i for i in range(len(sizes))] or sizes[-1] != 16 << 20:
        raise Failure(f"the all-reduces should go from 1 KiB to 16 MiB by 4x, got {sizes}")
    if any(p["ranks"] != 2 or not p["us"] > 0 for p in points):
        raise Failure(f"every point is of 2 ranks and takes some time: {points}")
    if not any(p.get("ranks") == 2 for p in data["profiles"]):
        raise Failure("no profile of 2 ranks computing at once")
    print("link:", json.dumps(link))
    result = run([args.netc, "estimate", os.path.join(args.source, NETWORKS["mnist"]), "--samples", "256",
                  "--ranks", "2", "--threads", "1", "--cost-model", table, "--format", "json"])
    estimate = json.loads(result.stdout)
    gradient_bytes = estimate["memory_per_rank"]["gradients"]  # one bucket: 0.5 MiB is below --bucket-mb
    expected = link_all_reduce_us(link, gradient_bytes, 2)
    got = estimate["step"]["all_reduce"] * 1e6
    print(f"all-reduce of {gradient_bytes} bytes: estimated {got:.3f} us, expected {expected:.3f} us")
    if abs(got - expected) > 1e-6 * expected:
        raise Failure(f"the estimate's all-reduce ({got} us) is not the link's ({expected} us)")


CASES = {"equivalence": case_equivalence, "calibrate": case_calibrate, "local-sgd": case_local_sgd,
         "deterministic": case_deterministic,
         "resume": case_resume,
         "frozen": case_frozen, "killed": case_killed, "mismatch": case_mismatch, "no-mpi": case_no_mpi}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--netc", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    parser.add_argument("--network", default="mnist", choices=sorted(NETWORKS))
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--launcher", default="mpirun", choices=["mpirun", "ranks"])
    args = parser.parse_args()
    args.netc = os.path.abspath(args.netc)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    try:
        if args.case != "no-mpi" and (os.cpu_count() or 1) < 2:
            raise Skip("this machine has one CPU; 2 ranks need 2")
        CASES[args.case](args)
    except Skip as reason:
        print(f"dp_test: SKIP: {reason}")
        return SKIP
    except (Failure, subprocess.TimeoutExpired) as failure:
        print(f"dp_test: FAILED: {failure}")
        return 1
    print("dp_test: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
