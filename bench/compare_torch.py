#!/usr/bin/env python3
"""netc against PyTorch, side by side: training and inference throughput of the same networks.

What it is for: the one command behind the "Training throughput vs PyTorch" section of
docs/performance.md. For each network (the seed network examples/mnist.net and
examples/lenet5.net) and each thread count (1, then 2) it runs

  netc bench FILE --batch B --threads T --warmup W --iterations I --repeats R --format json
                            (prints {"train_images_per_sec": X, "infer_images_per_sec": Y, ...})
  /usr/bin/python3 bench/torch_reference.py --net NET --batch B --threads T --warmup W --iters I --repeats R

--repeats times each (default 5). Inside one process both sides do the same thing: W untimed steps,
then R measurements of I timed steps each, and report the median of the R (defaults W=5, I=20, R=5:
--warmup, --iters, --inner-repeats). The runs alternate (netc, torch, torch, netc, ...: the side that
goes first swaps every round) and go round-robin over the configurations, so drift in the load of
this shared machine hits both sides alike. Each run is a fresh process; the images/s it reports is
one sample. The table gives, per network and thread count, the median training and inference
images/s of both sides and the ratio netc / PyTorch (above 1: netc is faster). The project's goal,
printed as met / not met: netc >= 3x PyTorch's training throughput on the seed network, 1 thread.

If the netc binary is missing, has no `bench` subcommand, or `netc bench` fails, the script says so
plainly, shows "n/a" for netc, and still measures and prints the PyTorch side.

Usage:
  python3 bench/compare_torch.py [--netc build/tools/netc/netc] [--python /usr/bin/python3]
      [--nets seed,lenet5] [--threads 1,2] [--batch 128] [--repeats 5]
      [--warmup 5] [--iters 20] [--inner-repeats 5] [--netc-args "EXTRA ARGS"] [--torch-only]
      [--json FILE]
--netc-args are appended to every `netc bench` command line. The summary also gives the number of
runnable processes on the machine as each run started (/proc/stat): above 1 (this benchmark) means
other work was competing for the 2 cores, and with 2 threads that costs far more than half.
Only the Python 3 standard library is used here (PyTorch runs in the child).
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETS = {"seed": "examples/mnist.net", "lenet5": "examples/lenet5.net"}
KEYS = ("train_images_per_sec", "infer_images_per_sec")
# Optional figures, kept in the JSON when a side reports them (torch_reference.py does): images per
# CPU second, which other work on the machine disturbs far less than wall-clock time at 1 thread.
CPU_KEYS = ("train_images_per_cpu_sec", "infer_images_per_cpu_sec")
GOAL_RATIO = 3.0  # netc / PyTorch training images/s, seed network, 1 thread


def parse_json_output(text):
    """The JSON object a child printed: the whole stdout, else its last line that parses as an object."""
    text = text.strip()
    try:
        value = json.loads(text)
        if isinstance(value, dict):
            return value
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
                if isinstance(value, dict):
                    return value
            except ValueError:
                continue
    return None


def run_child(cmd, timeout):
    """Runs cmd; returns (result dict or None, error text or None, wall seconds)."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s", time.perf_counter() - start
    except OSError as e:
        return None, str(e), time.perf_counter() - start
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip())[-800:]
        return None, f"exit status {proc.returncode}: {tail}", wall
    result = parse_json_output(proc.stdout)
    if result is None or any(not isinstance(result.get(k), (int, float)) for k in KEYS):
        return None, f"no JSON object with {', '.join(KEYS)} in its output: {proc.stdout.strip()[-800:]!r}", wall
    return result, None, wall


def netc_bench_status(netc):
    """(available, reason): whether this netc binary has a `bench` subcommand."""
    if not os.path.isfile(netc) or not os.access(netc, os.X_OK):
        return False, f"netc not found at {netc} (build it, or pass --netc)"
    try:
        proc = subprocess.run([netc, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"`{netc} --help` failed: {e}"
    if not re.search(r"^\s+bench\b", proc.stdout + proc.stderr, re.M):
        return False, f"netc bench is unavailable: {netc} has no 'bench' subcommand yet"
    return True, None


def file_info(path):
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        mtime = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
        return {"path": path, "sha256": digest, "mtime_utc": mtime.isoformat(timespec="seconds")}
    except OSError:
        return {"path": path}


def loadavg():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def runnable():
    """Processes running or ready to run on the whole machine right now (/proc/stat), this one included."""
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("procs_running"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def median(values):
    return statistics.median(values) if values else None


def fmt_rate(v):
    return "n/a" if v is None else f"{v:,.0f}"


def fmt_ratio(a, b):
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--netc", default=os.path.join(REPO, "build/tools/netc/netc"))
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python with PyTorch (default /usr/bin/python3)")
    ap.add_argument("--nets", default="seed,lenet5", help="comma list of: " + ", ".join(NETS))
    ap.add_argument("--threads", default="1,2", help="comma list of thread counts (default 1,2)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5, help="runs of each side per configuration (default 5)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps at the start of each run (both sides)")
    ap.add_argument("--iters", type=int, default=20, help="timed steps per measurement (both sides)")
    ap.add_argument("--inner-repeats", type=int, default=5,
                    help="measurements per run; each run reports their median (both sides)")
    ap.add_argument("--netc-args", default="", help="extra arguments appended to each `netc bench` command")
    ap.add_argument("--torch-only", action="store_true", help="do not run netc")
    ap.add_argument("--timeout", type=int, default=600, help="seconds allowed per child process")
    ap.add_argument("--json", metavar="FILE", help="write every sample and figure to FILE")
    args = ap.parse_args()

    nets = [n.strip() for n in args.nets.split(",") if n.strip()]
    for n in nets:
        if n not in NETS:
            ap.error(f"unknown net {n!r}; choose from {', '.join(NETS)}")
    try:
        threads = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        ap.error("--threads takes a comma list of integers")
    if min(threads + [args.batch, args.repeats, args.iters, args.inner_repeats]) < 1 or args.warmup < 0:
        ap.error("--threads, --batch, --repeats, --iters and --inner-repeats must be >= 1, --warmup >= 0")

    netc = os.path.abspath(args.netc)
    if args.torch_only:
        netc_ok, netc_reason = False, "not run (--torch-only)"
    else:
        netc_ok, netc_reason = netc_bench_status(netc)
    if not netc_ok:
        print(f"compare_torch: {netc_reason}; measuring the PyTorch side only.", file=sys.stderr)
    torch_script = os.path.join(REPO, "bench", "torch_reference.py")

    configs = [(n, t) for n in nets for t in threads]
    runs = {c: {"netc": {k: [] for k in KEYS + CPU_KEYS}, "torch": {k: [] for k in KEYS + CPU_KEYS},
                "netc_errors": [], "netc_last": None, "torch_last": None, "commands": {}} for c in configs}
    config_netc_ok = {c: netc_ok for c in configs}

    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = loadavg()
    busy = []  # runnable processes sampled as each child starts: the noise from other work
    for rnd in range(args.repeats):
        for c in configs:
            net, t = c
            file = os.path.join(REPO, NETS[net])
            netc_cmd = [netc, "bench", file, "--device", "cpu", "--batch", str(args.batch), "--threads", str(t),
                        "--warmup", str(args.warmup), "--iterations", str(args.iters),
                        "--repeats", str(args.inner_repeats), "--format", "json"] + shlex.split(args.netc_args)
            torch_cmd = [args.python, torch_script, "--net", net, "--batch", str(args.batch), "--threads", str(t),
                         "--warmup", str(args.warmup), "--iters", str(args.iters),
                         "--repeats", str(args.inner_repeats)]
            runs[c]["commands"] = {"netc": shlex.join(netc_cmd), "torch": shlex.join(torch_cmd)}
            order = ["netc", "torch"] if rnd % 2 == 0 else ["torch", "netc"]
            for side in order:
                if side == "netc" and not config_netc_ok[c]:
                    continue
                busy.append(runnable())
                if side == "netc":
                    result, err, _ = run_child(netc_cmd, args.timeout)
                    if err:
                        runs[c]["netc_errors"].append(err)
                        config_netc_ok[c] = False
                        print(f"compare_torch: `{shlex.join(netc_cmd)}` failed ({err}); "
                              f"no netc figures for {net}, {t} thread(s).", file=sys.stderr)
                        continue
                    runs[c]["netc_last"] = result
                else:
                    result, err, _ = run_child(torch_cmd, args.timeout)
                    if err:
                        sys.exit(f"compare_torch: `{shlex.join(torch_cmd)}` failed: {err}")
                    runs[c]["torch_last"] = result
                for k in KEYS + CPU_KEYS:
                    if isinstance(result.get(k), (int, float)):
                        runs[c][side][k].append(float(result[k]))
            progress = f"  round {rnd + 1}/{args.repeats}: {net}, {t} thread(s): torch train " \
                       f"{runs[c]['torch'][KEYS[0]][-1]:,.0f} img/s"
            if config_netc_ok[c] and runs[c]["netc"][KEYS[0]]:
                progress += f", netc train {runs[c]['netc'][KEYS[0]][-1]:,.0f} img/s"
            print(progress, file=sys.stderr)
    load_after = loadavg()

    rows = []
    for c in configs:
        net, t = c
        row = {"net": net, "file": NETS[net], "threads": t, "batch": args.batch}
        for side in ("netc", "torch"):
            for k in KEYS + CPU_KEYS:
                row[f"{side}_{k}"] = median(runs[c][side][k])
                row[f"{side}_{k}_samples"] = runs[c][side][k]
        for k, short in zip(KEYS, ("train", "infer")):
            a, b = row[f"netc_{k}"], row[f"torch_{k}"]
            row[f"{short}_ratio"] = None if a is None or not b else a / b
        row["netc_errors"] = runs[c]["netc_errors"]
        row["netc_last_output"] = runs[c]["netc_last"]
        row["torch_last_output"] = runs[c]["torch_last"]
        row["commands"] = runs[c]["commands"]
        rows.append(row)

    header = ["net", "threads", "netc train", "torch train", "ratio", "netc infer", "torch infer", "ratio"]
    table = [[r["net"], str(r["threads"]),
              fmt_rate(r["netc_train_images_per_sec"]), fmt_rate(r["torch_train_images_per_sec"]),
              fmt_ratio(r["netc_train_images_per_sec"], r["torch_train_images_per_sec"]),
              fmt_rate(r["netc_infer_images_per_sec"]), fmt_rate(r["torch_infer_images_per_sec"]),
              fmt_ratio(r["netc_infer_images_per_sec"], r["torch_infer_images_per_sec"])] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(header, *table)]
    print(f"images/s, batch {args.batch}: median over {args.repeats} runs per side (each run: median of "
          f"{args.inner_repeats} x {args.iters} steps); ratio = netc / PyTorch")
    for i, line in enumerate([header] + table):
        print("  ".join(x.ljust(w) if j < 2 else x.rjust(w) for j, (x, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    if not netc_ok:
        print(f"netc: {netc_reason}")
    for r in rows:
        if r["netc_errors"]:
            print(f"netc bench failed for {r['net']}, {r['threads']} thread(s): {r['netc_errors'][0]}")

    goal = next((r for r in rows if r["net"] == "seed" and r["threads"] == 1), None)
    goal_text = "not measured (run with the seed network and 1 thread)"
    goal_met = None
    if goal is not None:
        if goal["train_ratio"] is None:
            goal_text = "unknown (no netc figure)"
        else:
            goal_met = goal["train_ratio"] >= GOAL_RATIO
            goal_text = f"{'met' if goal_met else 'not met'} ({goal['train_ratio']:.2f}x)"
    print(f"goal: netc >= {GOAL_RATIO:g}x PyTorch training throughput, seed network, 1 thread: {goal_text}")
    busy = [b for b in busy if b is not None]
    busy_text = f"median {median(busy):g}, max {max(busy)}" if busy else "unknown"
    print(f"load average (1 min): {load_before:.2f} before, {load_after:.2f} after; "
          f"runnable processes as each run started: {busy_text} (1 = this benchmark alone)")

    if args.json:
        out = {
            "date_utc": started.isoformat(timespec="seconds"),
            "command": shlex.join([sys.executable] + sys.argv),
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                        "load_average_before": load_before, "load_average_after": load_after,
                        "runnable_at_child_start": busy},
            "netc": dict(file_info(netc), bench_available=netc_ok, reason=netc_reason),
            "torch_version": next((r["torch_last_output"]["torch_version"] for r in rows
                                   if r["torch_last_output"]), None),
            "batch": args.batch, "repeats": args.repeats, "warmup": args.warmup, "iters": args.iters,
            "inner_repeats": args.inner_repeats,
            "goal": {"ratio": GOAL_RATIO, "met": goal_met, "text": goal_text},
            "results": rows,
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
