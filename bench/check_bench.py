#!/usr/bin/env python3
"""Benchmark `netc check`: wall time (and optionally instruction counts) per network.

What it is for: measuring how long the whole process `netc check FILE` takes on
the seed network (examples/mnist.net) and on generated networks of 1,000 to
10,000 layers (bench/gen_networks.py), and whether the cost grows linearly with
the number of layers. docs/architecture.md §Performance measurement: performance is measured by
benchmarks, never by timed tests; report medians and the exact command.

Method:
  * The networks are generated into --work-dir (default: a temporary folder)
    and each is first checked once: it must exit 0 and print nothing.
  * Every file is run --warmup times (default 2, not recorded), then --reps
    times (default 15). Runs go round-robin over the files, so drift in the
    load of this shared machine hits every file alike. Each run is a fresh
    process, timed from spawn to exit (time.perf_counter); user+sys CPU time
    and peak RSS come from os.wait4.
  * The table shows min / median / p90 wall time, median per layer for the
    generated files, and the ratio of per-layer cost between the largest and
    the smallest chain (about 1.0 means linear growth).
  * --instructions runs each file once more under `valgrind --tool=callgrind`
    (deterministic instruction counts; slow: about 50x) or, with
    --instructions=perf, `perf stat -e instructions:u` (needs a hardware PMU,
    which virtual machines often lack).
  * Goals, printed as met / not met: largest chain (10,000 layers) median
    < 0.5 s; seed network median < 20 ms.

Usage:
  python3 bench/check_bench.py [NETC] [--reps 15] [--warmup 2]
      [--instructions[=callgrind|perf]] [--json FILE] [--work-dir DIR]
      [--sizes 1000,3000,10000] [--conv 1000]
  NETC defaults to build/tools/netc/netc of this repository (the README's build).

Only the Python 3 standard library is used.
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.dont_write_bytecode = True  # keep bench/ free of __pycache__
sys.path.insert(0, HERE)
import gen_networks  # noqa: E402  (same folder)

DEFAULT_NETC = os.path.join(REPO, "build", "tools", "netc", "netc")  # the README's build
SEED = os.path.join(REPO, "examples", "mnist.net")
GOAL_LARGEST_S = 0.5  # largest chain (10,000 layers)
GOAL_SEED_S = 0.020  # seed network
LINEAR_TOLERANCE = 1.25  # per-layer cost ratio (largest / smallest chain) still called linear


def percentile(values, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    s = sorted(values)
    k = max(1, math.ceil(q / 100.0 * len(s)))
    return s[k - 1]


def run_once(cmd):
    """Run cmd once with output discarded; return (wall s, user+sys s, max RSS KiB, status)."""
    t0 = time.perf_counter()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as e:  # e.g. the binary is being rebuilt under us
        raise SystemExit(f"error: cannot run {cmd[0]}: {e} (is it being rebuilt? retry later)")
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, p.returncode


def callgrind_instructions(netc, path):
    """Instructions executed by `netc check path` under callgrind (deterministic)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        p = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             netc, "check", "--color", "never", path],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"callgrind failed on {path}:\n{p.stderr[-1000:]}")
    return int(m.group(1))


def perf_instructions(netc, path):
    """Instructions (user space) counted by `perf stat`; None where unsupported."""
    p = subprocess.run(
        ["perf", "stat", "-x,", "-e", "instructions:u", netc, "check", "--color", "never", path],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("instructions"):
            return int(fields[0]) if fields[0].isdigit() else None
    return None


def layers_known(row):
    return row.get("median_per_layer_us") is not None


def fmt_time(s):
    return f"{s * 1e3:9.1f} ms" if s < 10 else f"{s:9.2f} s "


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("netc", nargs="?", default=DEFAULT_NETC, help=f"netc binary (default {DEFAULT_NETC})")
    ap.add_argument("-r", "--reps", type=int, default=15, help="timed runs per file (default 15)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs per file first (default 2)")
    ap.add_argument("--instructions", nargs="?", const="callgrind", choices=["callgrind", "perf"],
                    help="also count instructions once per file (callgrind by default; slow)")
    ap.add_argument("--json", metavar="FILE", help="write a JSON summary to FILE")
    ap.add_argument("--work-dir", help="where to generate the networks (default: a temporary folder)")
    ap.add_argument("--sizes", type=gen_networks._parse_sizes, default=gen_networks.DEFAULT_SIZES,
                    help="chain lengths (default 1000,3000,10000)")
    ap.add_argument("--conv", type=int, default=gen_networks.DEFAULT_CONV,
                    help="layers of the convolution network (default 1000; 0: none)")
    args = ap.parse_args(argv)

    netc = os.path.abspath(args.netc)
    if not os.access(netc, os.X_OK):
        print(f"error: no netc binary at {netc} (build it first, or pass its path)", file=sys.stderr)
        return 2
    if args.reps < 1:
        ap.error("--reps must be at least 1")

    tmp = None
    work = args.work_dir
    if not work:
        tmp = tempfile.TemporaryDirectory(prefix="netc-check-bench-")
        work = tmp.name
    try:
        infos = gen_networks.generate(work, args.sizes, args.conv)
        problems = gen_networks.verify(netc, infos)
        seed_check = subprocess.run([netc, "check", "--color", "never", SEED],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if seed_check.returncode != 0 or seed_check.stdout.strip():
            problems.append(f"{SEED}: exit {seed_check.returncode}\n{seed_check.stdout[:600]}")
        if problems:
            print("error: not every network checks clean:\n" + "\n".join(problems), file=sys.stderr)
            return 1

        # name, path, layers (None for the seed: no per-layer figure), bundles
        files = [("mnist (seed)", SEED, None, None)]
        files += [(i.name, i.path, i.layers, i.bundles) for i in infos]
        cmd = {name: [netc, "check", path] for name, path, _, _ in files}

        load_before = os.getloadavg()
        for _ in range(args.warmup):
            for name, *_ in files:
                run_once(cmd[name])
        walls = {name: [] for name, *_ in files}
        cpus = {name: [] for name, *_ in files}
        rss = {name: 0 for name, *_ in files}
        for _ in range(args.reps):
            for name, *_ in files:
                wall, cpu, maxrss, rc = run_once(cmd[name])
                if rc != 0:
                    print(f"error: {' '.join(cmd[name])} exited {rc}", file=sys.stderr)
                    return 1
                walls[name].append(wall)
                cpus[name].append(cpu)
                rss[name] = max(rss[name], maxrss)

        load_after = os.getloadavg()
        instr = {}
        if args.instructions:
            tool = args.instructions
            if shutil.which("valgrind" if tool == "callgrind" else "perf") is None:
                print(f"warning: {tool} not found; no instruction counts", file=sys.stderr)
            else:
                for name, path, *_ in files:
                    n = (callgrind_instructions(netc, path) if tool == "callgrind"
                         else perf_instructions(netc, path))
                    if n is None:
                        print(f"warning: perf cannot count instructions here (no PMU?); "
                              f"try --instructions=callgrind", file=sys.stderr)
                        break
                    instr[name] = n

        rows = []
        for name, path, layers, bundles in files:
            w = walls[name]
            row = {
                "name": name,
                "file": os.path.relpath(path, REPO) if path.startswith(REPO) else os.path.basename(path),
                "layers": layers,
                "bundles": bundles,
                "runs": len(w),
                "wall_min_s": min(w),
                "wall_median_s": statistics.median(w),
                "wall_p90_s": percentile(w, 90),
                "cpu_median_s": statistics.median(cpus[name]),
                "max_rss_kib": rss[name],
            }
            if layers:
                row["median_per_layer_us"] = row["wall_median_s"] / layers * 1e6
            if name in instr:
                row["instructions"] = instr[name]
                if layers:
                    row["instructions_per_layer"] = instr[name] / layers
            rows.append(row)

        # Peak RSS: Python spawns with vfork, and Linux keeps the pre-exec high-water mark,
        # so a child's ru_maxrss is never below this process's own RSS: show that as a floor.
        rss_floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for r in rows:
            r["max_rss_is_floor"] = r["max_rss_kib"] <= rss_floor

        # Table.
        head = (f"{'file':<14}{'layers':>8}{'min':>13}{'median':>13}{'p90':>13}"
                f"{'cpu med':>13}{'us/layer':>10}{'max RSS':>10}")
        if instr:
            head += f"{'instructions':>16}{'instr/layer':>13}"
        print(f"netc check benchmark: {args.reps} runs per file after {args.warmup} warm-ups")
        print(f"binary: {netc}")
        print(f"load average (1 min) before/after timing: {load_before[0]:.2f} / {load_after[0]:.2f} "
              f"on {os.cpu_count()} CPUs")
        print(head)
        print("-" * len(head))
        for r in rows:
            line = (f"{r['name']:<14}{r['layers'] or '-':>8}{fmt_time(r['wall_min_s']):>13}"
                    f"{fmt_time(r['wall_median_s']):>13}{fmt_time(r['wall_p90_s']):>13}"
                    f"{fmt_time(r['cpu_median_s']):>13}"
                    + (f"{r['median_per_layer_us']:>10.1f}" if layers_known(r) else f"{'-':>10}")
                    + (f"{r['max_rss_kib'] / 1024:>7.1f} MB" if r['max_rss_kib'] > rss_floor
                       else f"{'<' + format(rss_floor / 1024, '.0f'):>7} MB"))
            if instr:
                ins = r.get("instructions")
                ipl = r.get("instructions_per_layer")
                line += f"{ins:>16,}" if ins is not None else f"{'-':>16}"
                line += f"{ipl:>13,.0f}" if ipl is not None else f"{'-':>13}"
            print(line)

        # Linearity: per-layer cost of the largest chain over the smallest.
        chains = sorted((r for r in rows if r["name"].startswith("chain-")), key=lambda r: r["layers"])
        summary = {}
        if len(chains) >= 2:
            lo, hi = chains[0], chains[-1]
            t_ratio = hi["median_per_layer_us"] / lo["median_per_layer_us"]
            summary["per_layer_time_ratio"] = t_ratio
            summary["ratio_between"] = [lo["name"], hi["name"]]
            print()
            print(f"per-layer cost {hi['name']} / {lo['name']}: wall time {t_ratio:.2f}x", end="")
            basis = t_ratio
            if "instructions_per_layer" in lo and "instructions_per_layer" in hi:
                i_ratio = hi["instructions_per_layer"] / lo["instructions_per_layer"]
                summary["per_layer_instructions_ratio"] = i_ratio
                print(f", instructions {i_ratio:.2f}x", end="")
                basis = i_ratio  # deterministic: the better witness on a noisy machine
            print()
            summary["linear"] = basis <= LINEAR_TOLERANCE
            print(f"growth: {'linear' if summary['linear'] else 'SUPERLINEAR'} "
                  f"(per-layer ratio {basis:.2f}, tolerance {LINEAR_TOLERANCE})")

        goals = []
        seed = rows[0]
        goals.append({"goal": f"seed network median < {GOAL_SEED_S * 1e3:.0f} ms",
                      "value_s": seed["wall_median_s"], "met": seed["wall_median_s"] < GOAL_SEED_S})
        if chains:
            big = chains[-1]
            goals.append({"goal": f"{big['name']} median < {GOAL_LARGEST_S} s",
                          "value_s": big["wall_median_s"],
                          "met": big["wall_median_s"] < GOAL_LARGEST_S})
        print()
        for g in goals:
            print(f"goal {g['goal']}: {fmt_time(g['value_s']).strip()} -> "
                  f"{'met' if g['met'] else 'NOT MET'}")

        if args.json:
            doc = {
                "benchmark": "netc check",
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "command": " ".join([os.path.relpath(sys.argv[0])] + (argv if argv is not None else sys.argv[1:])),
                "netc": netc,
                "netc_sha256": hashlib.sha256(open(netc, "rb").read()).hexdigest(),
                "netc_mtime": datetime.datetime.fromtimestamp(
                    os.path.getmtime(netc), datetime.timezone.utc).isoformat(timespec="seconds"),
                "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                            "python": platform.python_version(),
                            "loadavg_1min_before": load_before[0], "loadavg_1min_after": load_after[0]},
                "reps": args.reps,
                "warmup": args.warmup,
                "instructions_tool": args.instructions if instr else None,
                "files": rows,
                "linearity": summary,
                "goals": goals,
            }
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=2)
                f.write("\n")
            print(f"\nJSON summary written to {args.json}")
        return 0
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
