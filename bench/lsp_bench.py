#!/usr/bin/env python3
"""Latency of `netc lsp` as an editor sees it: didChange -> publishDiagnostics, hover, completion.

What it is for: the editor goal of issue 4 -- diagnostics within 50 ms (95th percentile)
of an edit on a 1,000-line file. For each file (the seed network examples/mnist.net, and a
1,000-line chain of layers written by bench/gen_networks.py) it starts `netc lsp`, opens the file,
then:

  edits    N incremental didChange notifications, one at a time; each replaces one digit of a
           layer's shape (alternating between two values, so the file stays valid and every edit
           changes the network) and waits for the publishDiagnostics of that version. Latency:
           from writing the didChange to reading its publishDiagnostics.
  hover    N hover requests on layer names spread over the file.
  complete N completion requests after a `from `.

It reports the median, the 95th percentile and the maximum of each, in milliseconds, and whether
the goal (p95 of the edit latency < 50 ms on the 1,000-line file) is met. The server's debounce
(`--debounce-ms`, default that of `netc lsp`) is part of the edit latency, as in an editor.

Usage:
  python3 bench/lsp_bench.py [--netc build/tools/netc/netc] [--edits 200] [--requests 200]
                             [--lines 1000] [--debounce-ms N] [--json FILE]
Only the Python 3 standard library is used.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
import gen_networks  # noqa: E402


class Server:
    def __init__(self, netc, debounce):
        args = [netc, "lsp"] + (["--debounce-ms", str(debounce)] if debounce is not None else [])
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 1

    def send(self, message):
        body = json.dumps(message).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()

    def receive(self):
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            c = self.p.stdout.read(1)
            if not c:
                raise RuntimeError("netc lsp closed its output")
            header += c
        length = int(re.search(rb"Content-Length:\s*(\d+)", header).group(1))
        return json.loads(self.p.stdout.read(length))

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            m = self.receive()
            if m.get("id") == rid:
                return m

    def wait_publish(self, version):
        while True:
            m = self.receive()
            if m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == version:
                return m

    def close(self):
        self.request("shutdown", None)
        self.send({"jsonrpc": "2.0", "method": "exit"})
        self.p.wait(timeout=30)


def summary(samples):
    samples = sorted(samples)
    p95 = samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))]
    return {"median_ms": statistics.median(samples), "p95_ms": p95, "max_ms": samples[-1], "n": len(samples)}


def measure(netc, path, edits, requests, debounce):
    text = open(path).read()
    lines = text.split("\n")
    uri = "file://" + os.path.abspath(path)
    server = Server(netc, debounce)
    server.request("initialize", {"capabilities": {}})
    server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    server.send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                 "params": {"textDocument": {"uri": uri, "languageId": "netsharp", "version": 1, "text": text}}})
    first = server.wait_publish(1)
    errors = [d for d in first["params"]["diagnostics"] if d["severity"] == 1]
    if errors:
        raise SystemExit(f"{path} does not check cleanly: {errors[0]['message']}")
    # Editable digits: the last digit of a `[N]`-style shape on a layer line, and layer names to hover.
    layer = re.compile(r"^(\s*(?:input|hidden|output)\s+)(\w+)")
    names = [(i, m.end(1)) for i, line in enumerate(lines) if (m := layer.match(line))]
    shape_digit = re.compile(r"^(\s*hidden\s+\w+\s+\[)(\d+)\]")
    digits = [(i, m.end(2) - 1, lines[i][m.end(2) - 1]) for i, line in enumerate(lines) if (m := shape_digit.match(line))]
    if not digits:  # the seed network: edit MapCount's digit instead
        digits = [(i, m.start(1), m.group(1)) for i, line in enumerate(lines) if (m := re.search(r"MapCount = (\d)", line))]
    edit_ms = []
    version = 1
    for k in range(edits):
        line, column, original = digits[k % len(digits)]
        new = original if (k // len(digits)) % 2 else str((int(original) % 9) + 1)
        if new == original and (k // len(digits)) % 2 == 0:
            new = "2" if original != "2" else "3"
        version += 1
        start = time.perf_counter()
        server.send({"jsonrpc": "2.0", "method": "textDocument/didChange",
                     "params": {"textDocument": {"uri": uri, "version": version},
                                "contentChanges": [{"range": {"start": {"line": line, "character": column},
                                                              "end": {"line": line, "character": column + 1}},
                                                    "text": new}]}})
        server.wait_publish(version)
        edit_ms.append((time.perf_counter() - start) * 1000)
    hover_ms, complete_ms = [], []
    for k in range(requests):
        line, column = names[(k * 7919) % len(names)]
        start = time.perf_counter()
        r = server.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": line, "character": column + 1}})
        hover_ms.append((time.perf_counter() - start) * 1000)
        if not r.get("result"):
            raise SystemExit(f"hover at {line}:{column} gave no result: {r}")
    from_lines = [(i, line.index("from ") + 5) for i, line in enumerate(lines) if "from " in line]
    for k in range(requests):
        line, column = from_lines[(k * 104729) % len(from_lines)]
        start = time.perf_counter()
        r = server.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                       "position": {"line": line, "character": column}})
        complete_ms.append((time.perf_counter() - start) * 1000)
        if not r["result"]["items"]:
            raise SystemExit(f"completion at {line}:{column} gave no items")
    server.close()
    return {"file": os.path.relpath(path, REPO) if path.startswith(REPO) else os.path.basename(path),
            "lines": len(lines), "edit": summary(edit_ms), "hover": summary(hover_ms),
            "completion": summary(complete_ms)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--netc", default=os.path.join(REPO, "build/tools/netc/netc"))
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--lines", type=int, default=1000, help="about this many lines in the large file")
    parser.add_argument("--debounce-ms", type=int, default=None, help="passed to netc lsp (default: its own)")
    parser.add_argument("--json", help="write the figures to FILE")
    args = parser.parse_args()
    if not os.access(args.netc, os.X_OK):
        raise SystemExit(f"{args.netc} is not an executable netc; build it first (scripts/build.sh)")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        layers = max(10, args.lines // 3)  # gen_networks writes about 3 lines per layer
        gen_networks.generate(tmp, sizes=[layers], conv=0)
        large = os.path.join(tmp, f"chain-{layers}.net")
        for path in (os.path.join(REPO, "examples/mnist.net"), large):
            r = measure(args.netc, path, args.edits, args.requests, args.debounce_ms)
            results.append(r)
            print(f"{r['file']} ({r['lines']} lines): "
                  + "; ".join(f"{k} median {r[k]['median_ms']:.1f} ms, p95 {r[k]['p95_ms']:.1f} ms, max {r[k]['max_ms']:.1f} ms"
                              for k in ("edit", "hover", "completion")))
    goal = results[-1]["edit"]["p95_ms"] < 50
    print(f"goal: p95 didChange -> publishDiagnostics < 50 ms on the {results[-1]['lines']}-line file: "
          f"{'met' if goal else 'not met'} ({results[-1]['edit']['p95_ms']:.1f} ms)")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "goal_met": goal, "netc": args.netc,
                       "debounce_ms": args.debounce_ms, "load_average": os.getloadavg()[0]}, f, indent=2)


if __name__ == "__main__":
    main()
