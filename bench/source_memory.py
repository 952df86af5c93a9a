#!/usr/bin/env python3
"""Peak memory of `netc check` and `netc show` on large and hostile files.

What it is for: issue 10 asks that, below the source-size cap (64 MiB then,
4 MiB by default now; --max-source-size), netc's peak memory stays proportional to the
file: a stated multiple of its size. This script writes each construct at
about --size bytes (60 MB by default), runs netc on it once, and reports
the wall time, the exit status, the peak resident memory (from wait4) and
that peak divided by the file's size. Peak memory is deterministic enough
that one run per file is enough; times are a rough guide on a shared
machine. Run it on a build without sanitizers.

The files:
  plus       const X = 1+1+...+1;  (an expression nested far too deep: NS0108)
  consts     const C0 = 0; const C1 = 1; ... (millions of statements)
  tuple      const T = [1, 1, ..., 1];  (one tuple, 3 bytes an item)
  weights    const W = [0.25, -1.5, ...]; (a tuple of signed reals)
  random     random bytes (NUL bytes among them: NS0110)
  text-noise random bytes with no NUL (errors stop at the --error-limit)
  chain      the 10,000-layer network of bench/gen_networks.py (1.6 MB)
  maps       MapCount = 1000000: `show` from sizes alone
  convolve   a 1000x1000 input with a 500x500 convolve: `show` from sizes alone

Usage:
  python3 bench/source_memory.py [NETC] [--size BYTES] [--work-dir DIR] [--json FILE]

Only the Python 3 standard library is used.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_networks  # noqa: E402

DEFAULT_NETC = os.path.join(os.path.dirname(HERE), "build", "tools", "netc", "netc")
TAIL = "\ninput In [3];\noutput O [2] from In all;\n"


def write_repeated(path, head, item, last, tail, size):
    """head + item * n + last + tail, about `size` bytes, written in chunks."""
    count = max(1, (size - len(head) - len(last) - len(tail)) // len(item))
    with open(path, "w") as out:
        out.write(head)
        chunk = item * 100000
        for _ in range(count // 100000):
            out.write(chunk)
        out.write(item * (count % 100000))
        out.write(last + tail)


def write_consts(path, size):
    with open(path, "w") as out:
        written, i = 0, 0
        lines = []
        while written < size - len(TAIL):
            line = f"const C{i} = {i % 97};\n"
            lines.append(line)
            written += len(line)
            i += 1
            if len(lines) == 100000:
                out.write("".join(lines))
                lines = []
        out.write("".join(lines) + TAIL)


def write_weights(path, size):
    rng = random.Random(1)
    with open(path, "w") as out:
        out.write("const W = [")
        written = 11
        while written < size - 40:
            piece = ", ".join(f"{'-' if rng.random() < 0.5 else ''}{rng.randint(0, 9)}.{rng.randint(0, 99):02d}"
                              for _ in range(10000)) + ", "
            out.write(piece)
            written += len(piece)
        out.write("0.5];" + TAIL)


def write_random(path, size, no_nul):
    rng = random.Random(2 if no_nul else 3)
    with open(path, "wb") as out:
        left = size
        while left > 0:
            block = rng.randbytes(min(left, 1 << 20))
            if no_nul:
                block = block.replace(b"\0", b"\1")
            out.write(block)
            left -= len(block)


def peak_of(cmd):
    """Exit status, seconds, peak RSS in bytes and the last stderr line of one run."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    lines = err.decode(errors="replace").strip().splitlines()
    return code, seconds, usage.ru_maxrss * 1024, (lines[-1] if lines else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("netc", nargs="?", default=DEFAULT_NETC, help=f"netc binary (default {DEFAULT_NETC})")
    ap.add_argument("--size", type=int, default=60_000_000, help="bytes per generated file (default 60,000,000)")
    ap.add_argument("--work-dir", help="where to write the files (default: a temporary folder)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    if not os.access(args.netc, os.X_OK):
        sys.exit(f"source_memory.py: {args.netc} is not an executable netc (build it, or pass its path)")

    work = args.work_dir or tempfile.mkdtemp(prefix="netc-source-memory-")
    os.makedirs(work, exist_ok=True)
    size = args.size
    files = {}

    def path(name):
        return os.path.join(work, name)

    write_repeated(path("plus.net"), "const X = ", "1+", "1;", TAIL, size)
    files["plus"] = ("check", path("plus.net"))
    write_consts(path("consts.net"), size)
    files["consts"] = ("check", path("consts.net"))
    write_repeated(path("tuple.net"), "const T = [", "1, ", "1];", TAIL, size)
    files["tuple"] = ("check", path("tuple.net"))
    write_weights(path("weights.net"), size)
    files["weights"] = ("check", path("weights.net"))
    write_random(path("random.bin"), size, no_nul=False)
    files["random"] = ("check", path("random.bin"))
    write_random(path("text-noise.bin"), size, no_nul=True)
    files["text-noise"] = ("check", path("text-noise.bin"))
    chain = gen_networks.generate(work, sizes=[10000], conv=0)[0].path
    files["chain"] = ("check", chain)
    with open(path("maps.net"), "w") as out:
        out.write("input In [24, 24];\nhidden C [1000000, 24, 24] from In convolve {\n"
                  "  InputShape = [24, 24]; KernelShape = [1, 1]; MapCount = 1000000; }\n"
                  "output O [2] from C all;\n")
    files["maps"] = ("show", path("maps.net"))
    with open(path("convolve.net"), "w") as out:
        out.write("input Pic [1000, 1000];\nhidden C [501, 501] from Pic convolve {\n"
                  "  InputShape = [1000, 1000]; KernelShape = [500, 500]; }\n"
                  "output O [2] from C all;\n")
    files["convolve"] = ("show", path("convolve.net"))

    rows = []
    print(f"netc: {args.netc}\nfiles in {work}\n")
    print(f"{'file':<11} {'command':<7} {'size':>12} {'status':>6} {'seconds':>8} {'peak RSS':>10} {'peak/size':>9}  last message")
    for name, (command, file) in files.items():
        cmd = [args.netc, command, file, "--max-source-size", "2G"]
        code, seconds, peak, message = peak_of(cmd)
        file_size = os.path.getsize(file)
        ratio = peak / file_size
        rows.append({"file": name, "command": command, "bytes": file_size, "status": code,
                     "seconds": round(seconds, 2), "peak_rss_bytes": peak, "peak_per_byte": round(ratio, 1),
                     "message": message[:200]})
        print(f"{name:<11} {command:<7} {file_size:>12,} {code:>6} {seconds:>8.2f} {peak / 2**20:>8.0f} MiB "
              f"{ratio:>8.1f}x  {message[:90]}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"netc": args.netc, "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
