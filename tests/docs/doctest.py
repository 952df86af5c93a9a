#!/usr/bin/env python3
"""doctest.py -- runs the examples of README.md and docs/*.md and compares their output.

The convention (docs/testing.md says the same for writers). A fenced block is tested according to
its info string, the words after the opening ```:

  ```net                 a complete Net# file: `netc check` must accept it with no output at all.
  ```net show            as above, and the very next fenced block (```text) must equal `netc show`
                         of it.
  ```net diagnostics     a file netc rejects or warns about: the very next ```text block must equal
                         `netc check example.net` (the file is written as example.net).
  ```net fragment        part of a file: not checked.
  ```console doctest     a terminal transcript. Lines starting with "$ " are commands; a command
                         ending in "\\" continues on the next line, and a here-document (<<EOF or
                         <<'EOF') takes the lines up to its terminator. The lines after a command,
                         up to the next "$ ", are its expected output (stdout and stderr together).
                         A line "..." (alone, or followed by spaces and a "(comment)") matches any
                         number of lines. Modifiers after "doctest": needs=mnist (data/mnist must
                         exist), needs=gpu (nvidia-smi lists a GPU), needs=mpi (mpirun and the
                         build's MPI plugin are there: several ranks), needs=mpi-hosts (the
                         environment names a host file in NETC_DOCTEST_MPI_HOSTS), needs=llvm (the
                         build has netc build's LLVM plugin), long (run only
                         with --long or NETC_DOCTEST_LONG=1). A block whose need is missing is
                         skipped, and every skip is printed with its reason.
  any other block        not run.

Each command runs in its own `bash -c` with netc first on PATH, in a scratch folder made for the
markdown file: the blocks of one file run in order and share that folder (a block may use what an
earlier block of the same file wrote). The scratch folder holds links to the repository's examples/,
tests/, scripts/ and include/ (and data/mnist where it exists), and build -> the build folder.

Tolerated differences (both sides are normalised before comparing; nothing else is tolerated):
  - trailing spaces on a line, and blank lines at the end of an output;
  - durations: a number followed by s, ms, us or min ("0.1 s", "12.5 ms") reads <time>, and a clock
    "0:06" / "1:02:03" after "in " or "ETA " reads <time>;
  - speeds: "55835 img/s", "62,043 images/s", with the spaces that align them, read " <rate> img/s"
    and " <rate> images/s";
  - an estimate's relative error, "error -12.3%", reads error <pct>;
  - the instruction set of netc's dense kernels, "dense: netc avx512" in a run header or
    "dense      netc avx2" in netc bench's output, reads netc <isa> (it is the machine's);
  - the default cost table's name, "cost table 'cpu'" (the built-in one, where it describes the
    machine) or "cost table 'machine'" (the machine's own), reads cost table <default>;
  - the progress lines netc prints every 10 s when its output is not a terminal
    ("epoch 3/40: batch 124/251, loss ..., ETA 2:22") are dropped: they come with slowness;
  - the absolute paths of the scratch folder, the build folder and the repository read <scratch>,
    <build> and <repo> in netc's output (an example may write those placeholders).

Exit status: 0 when no block failed and at least one block was found (skips alone pass, but are
listed); 1 when a block failed, when no block was found at all (the test cannot pass vacuously), or
when a markdown file elsewhere in the repository carries a tested block that nothing tests; 2 on a
usage error.

Usage: doctest.py --netc PATH [--repo DIR] [--build DIR] [--long] [--verbose] [FILE.md ...]
(without files: README.md and docs/*.md of the repository).
"""

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

COMMAND_TIMEOUT_S = 300
KNOWN_NEEDS = ("mnist", "gpu", "mpi", "mpi-hosts", "llvm")


class Block:
    """One fenced block: where it starts, its info words and its lines."""

    def __init__(self, path, line, info, lines):
        self.path = path
        self.line = line  # 1-based line of the opening fence
        self.info = info.split()
        self.lines = lines

    def where(self):
        return f"{self.path}:{self.line}"


def read_blocks(path):
    """Every fenced block of a markdown file (fences of ``` or ~~~, possibly indented)."""
    blocks = []
    with open(path, encoding="utf-8") as f:
        text = f.read().split("\n")
    i = 0
    while i < len(text):
        m = re.match(r"^(\s*)(`{3,}|~{3,})(.*)$", text[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        start = i
        body = []
        i += 1
        while i < len(text) and not re.match(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$", text[i]):
            line = text[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1
        blocks.append(Block(path, start + 1, info, body))
    return blocks


def is_tested(block):
    words = block.info
    if not words:
        return False
    if words[0] == "net":
        return len(words) == 1 or words[1] != "fragment"
    return words[0] == "console" and len(words) > 1 and words[1] == "doctest"


class Normaliser:
    """The documented tolerances, applied to expected and actual output alike."""

    def __init__(self, paths):
        # Each path as given and as resolved, longest first (a scratch folder inside the build
        # folder reads <scratch>).
        pairs = {(v, name) for p, name in paths if p for v in (p, os.path.realpath(p))}
        self.paths = sorted(pairs, key=lambda x: -len(x[0]))

    def line(self, s):
        for p, name in self.paths:
            s = s.replace(p, name)
        s = re.sub(r" *(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)? (img/s|images/s)\b", r" <rate> \1", s)
        s = re.sub(r"(?<![\w.:])\d+(?:\.\d+)?(?:e[-+]?\d+)? ?(s|ms|us|µs|min)\b", "<time>", s)
        s = re.sub(r"\b(in|ETA) \d+:\d\d(?::\d\d)?\b", r"\1 <time>", s)
        s = re.sub(r"\berror [-+]?\d+(?:\.\d+)?%", "error <pct>", s)
        s = re.sub(r"\b(dense:? +netc) (?:avx512|avx2|baseline)\b", r"\1 <isa>", s)
        s = re.sub(r"\bcost table '(?:cpu|machine)'", "cost table <default>", s)
        return s.rstrip()

    # The plain progress line netc prints every 10 s when its output is not a terminal: whether
    # it appears depends on the machine's speed.
    PROGRESS = re.compile(r"^epoch \d+/\d+: batch \d+/\d+, loss .*, ETA .*$")

    def text(self, lines):
        out = [self.line(x) for x in lines if not self.PROGRESS.match(x)]
        while out and out[-1] == "":
            out.pop()
        return out


def is_ellipsis(line):
    return re.match(r"^\.\.\.(\s*|\s{2,}\(.*\)\s*)$", line) is not None


def matches(expected, actual):
    """Whether actual lines match expected lines, where an ellipsis line matches any run of lines."""
    memo = {}

    def go(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(expected):
            r = j == len(actual)
        elif is_ellipsis(expected[i]):
            r = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and expected[i] == actual[j] and go(i + 1, j + 1)
        memo[key] = r
        return r

    return go(0, 0)


def parse_transcript(lines):
    """The (command, expected output lines, line offset of the command) of a console block."""
    steps = []
    i = 0
    while i < len(lines) and not lines[i].startswith("$ "):
        if lines[i].strip():
            raise ValueError(f"line {i + 1} of the block comes before its first '$ ' command")
        i += 1
    while i < len(lines):
        offset = i
        command = lines[i][2:]
        i += 1
        while command.endswith("\\") and i < len(lines):
            command += "\n" + lines[i]
            i += 1
        heredoc = re.search(r"<<-?\s*'?\"?(\w+)'?\"?", command)
        if heredoc:
            terminator = heredoc.group(1)
            while i < len(lines):
                command += "\n" + lines[i]
                i += 1
                if lines[i - 1].strip() == terminator:
                    break
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        steps.append((command, expected, offset))
    return steps


class Runner:
    def __init__(self, args):
        self.netc = os.path.abspath(args.netc)
        self.repo = os.path.abspath(args.repo)
        self.build = os.path.abspath(args.build) if args.build else os.path.dirname(os.path.dirname(os.path.dirname(self.netc)))
        self.long = args.long or os.environ.get("NETC_DOCTEST_LONG") == "1"
        self.verbose = args.verbose
        self.passed = self.failed = 0
        self.skips = []
        self.failures = []

    # ---------------------------------------------------------------- needs
    def missing_need(self, words):
        """The reason a block cannot run here, or None."""
        for w in words:
            if w == "long":
                if not self.long:
                    return "long (a long run: pass --long or set NETC_DOCTEST_LONG=1 to run it)"
            elif w.startswith("needs="):
                need = w[len("needs="):]
                if need == "mnist":
                    if not os.path.isfile(os.path.join(self.repo, "data/mnist/train-images-idx3-ubyte")):
                        return "needs=mnist: data/mnist is missing (scripts/prepare_mnist.sh makes it)"
                elif need == "gpu":
                    try:
                        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
                        ok = r.returncode == 0 and "GPU" in r.stdout
                    except (OSError, subprocess.TimeoutExpired):
                        ok = False
                    if not ok:
                        return "needs=gpu: no NVIDIA GPU here (nvidia-smi -L lists none)"
                elif need == "mpi":
                    if not shutil.which("mpirun") or not os.path.isfile(
                            os.path.join(self.build, "runtime/comm/mpi/libnetc-comm-mpi.so")):
                        return ("needs=mpi: no mpirun, or this build has no MPI plugin (scripts/setup.sh --mpi, "
                                "then build again)")
                elif need == "mpi-hosts":
                    if not os.environ.get("NETC_DOCTEST_MPI_HOSTS"):
                        return "needs=mpi-hosts: NETC_DOCTEST_MPI_HOSTS names no host file"
                elif need == "llvm":
                    if not os.path.isfile(os.path.join(self.build, "codegen/llvm/libnetc-llvm.so")):
                        return ("needs=llvm: this build has no LLVM plugin for netc build "
                                "(scripts/setup.sh --llvm, then build again)")
        return None

    def bad_modifiers(self, words):
        bad = [w for w in words if w != "long" and not (w.startswith("needs=") and w[6:] in KNOWN_NEEDS)]
        return bad

    # ---------------------------------------------------------------- running
    def scratch_for(self, path):
        d = tempfile.mkdtemp(prefix="netc-doctest-")
        for name in ("examples", "tests", "scripts", "include"):
            src = os.path.join(self.repo, name)
            if os.path.exists(src):
                os.symlink(src, os.path.join(d, name))
        if os.path.isdir(os.path.join(self.repo, "data/mnist")):
            os.mkdir(os.path.join(d, "data"))
            os.symlink(os.path.join(self.repo, "data/mnist"), os.path.join(d, "data/mnist"))
        if os.path.isdir(self.build):
            os.symlink(self.build, os.path.join(d, "build"))
        return d

    def env(self):
        e = dict(os.environ)
        e["PATH"] = os.path.dirname(self.netc) + os.pathsep + e.get("PATH", "")
        e["LC_ALL"] = "C.UTF-8"
        e.pop("NO_COLOR", None)
        e["TERM"] = "dumb"
        # No other tasks as netc sees them (--threads 0, a cost table measured
        # beside other work): the output does not depend on the tests beside it.
        e.setdefault("NETC_OTHER_TASKS", "0")
        return e

    def run(self, command, cwd):
        try:
            r = subprocess.run(["bash", "-c", command], cwd=cwd, env=self.env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT_S)
            out = r.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode("utf-8", "replace") + f"\n<doctest: timed out after {COMMAND_TIMEOUT_S} s>"
        return out.split("\n")

    def compare(self, block, what, expected, actual, scratch):
        norm = Normaliser([(scratch, "<scratch>"), (self.build, "<build>"), (self.repo, "<repo>")])
        exp, act = norm.text(expected), norm.text(actual)
        if matches(exp, act):
            return True
        diff = difflib.unified_diff(exp, act, "expected (" + block.where() + ")", "actual", lineterm="")
        self.failures.append(f"FAIL {what}\n" + "\n".join(diff))
        return False

    def fail(self, message):
        self.failures.append("FAIL " + message)

    def run_net_block(self, block, following, scratch):
        mode = block.info[1] if len(block.info) > 1 else "check"
        if mode not in ("check", "show", "diagnostics") or len(block.info) > 2:
            self.fail(f"{block.where()}: unknown info string '{' '.join(block.info)}' (net, net show, net diagnostics, net fragment)")
            return False
        with open(os.path.join(scratch, "example.net"), "w", encoding="utf-8") as f:
            f.write("\n".join(block.lines) + "\n")
        check = self.run("netc check example.net", scratch)
        if mode in ("show", "diagnostics"):
            if following is None or following.info[:1] != ["text"]:
                self.fail(f"{block.where()}: a ```net {mode} block must be followed by a ```text block with the expected output")
                return False
        if mode == "diagnostics":
            return self.compare(block, f"{block.where()}: netc check example.net", following.lines, check, scratch)
        if any(x.strip() for x in check):
            self.fail(f"{block.where()}: netc check must accept this example without a diagnostic; it printed:\n" + "\n".join(check).rstrip())
            return False
        if mode == "show":
            return self.compare(block, f"{block.where()}: netc show example.net", following.lines,
                                self.run("netc show example.net", scratch), scratch)
        return True

    def run_console_block(self, block, scratch):
        try:
            steps = parse_transcript(block.lines)
        except ValueError as e:
            self.fail(f"{block.where()}: {e}")
            return False
        if not steps:
            self.fail(f"{block.where()}: a console doctest block without a '$ ' command")
            return False
        ok = True
        for command, expected, offset in steps:
            if self.verbose:
                print(f"  {block.path}:{block.line + 1 + offset}: $ {command.splitlines()[0]}", flush=True)
            actual = self.run(command, scratch)
            where = f"{block.path}:{block.line + 1 + offset}"
            if not self.compare(block, f"{where}: $ {command.splitlines()[0]}", expected, actual, scratch):
                ok = False
                break  # later commands usually depend on this one
        return ok

    def run_file(self, path):
        blocks = read_blocks(path)
        rel = os.path.relpath(path, self.repo)
        for b in blocks:
            b.path = rel
        tested = [(i, b) for i, b in enumerate(blocks) if is_tested(b)]
        if not tested:
            return 0
        scratch = self.scratch_for(path)
        try:
            for i, b in tested:
                if b.info[0] == "console":
                    modifiers = b.info[2:]
                    bad = self.bad_modifiers(modifiers)
                    if bad:
                        self.fail(f"{b.where()}: unknown modifier(s) {' '.join(bad)} (known: long, "
                                  + ", ".join("needs=" + n for n in KNOWN_NEEDS) + ")")
                        self.failed += 1
                        continue
                    reason = self.missing_need(modifiers)
                    if reason:
                        self.skips.append(f"SKIP {b.where()}: {reason}")
                        continue
                    ok = self.run_console_block(b, scratch)
                else:
                    ok = self.run_net_block(b, blocks[i + 1] if i + 1 < len(blocks) else None, scratch)
                if ok:
                    self.passed += 1
                else:
                    self.failed += 1
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return len(tested)


def untested_blocks(repo, tested_files):
    """Tested blocks in markdown files that this run does not read (they would never be run)."""
    tested = {os.path.realpath(p) for p in tested_files}
    found = []
    skip_dirs = {".git", "node_modules", ".cache", "data", "runs"}
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in skip_dirs and not d.startswith("build")
                   and not os.path.relpath(os.path.join(root, d), repo).startswith(os.path.join("tests", "docs", "fixtures"))]
        for name in files:
            p = os.path.join(root, name)
            if name.endswith(".md") and os.path.realpath(p) not in tested:
                try:
                    n = sum(1 for b in read_blocks(p) if is_tested(b))
                except (OSError, UnicodeDecodeError):
                    continue
                if n:
                    found.append(f"{os.path.relpath(p, repo)}: {n} tested block(s) in a file the docs test does not read")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--netc", required=True, help="the netc binary to test")
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    ap.add_argument("--build", help="the build folder (default: three folders above --netc)")
    ap.add_argument("--long", action="store_true", help="also run blocks marked long")
    ap.add_argument("--verbose", action="store_true", help="print each command as it runs")
    ap.add_argument("--no-coverage-check", action="store_true",
                    help="do not look for tested blocks in markdown files outside FILES (for fixtures)")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    if not os.access(args.netc, os.X_OK):
        print(f"doctest: {args.netc} is not an executable netc", file=sys.stderr)
        return 2
    repo = os.path.abspath(args.repo)
    files = args.files or [os.path.join(repo, "README.md")] + sorted(
        os.path.join(repo, "docs", f) for f in os.listdir(os.path.join(repo, "docs")) if f.endswith(".md"))
    runner = Runner(args)
    counts = {}
    for f in files:
        counts[os.path.relpath(os.path.abspath(f), repo)] = runner.run_file(os.path.abspath(f))
    total = sum(counts.values())
    for failure in runner.failures:
        print(failure + "\n")
    for skip in runner.skips:
        print(skip)
    stray = [] if args.no_coverage_check else untested_blocks(repo, files)
    for s in stray:
        print("FAIL " + s)
    print("doctest: tested blocks per file: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
    print(f"doctest: {total} tested block(s) in {sum(1 for v in counts.values() if v)} of {len(files)} file(s): "
          f"{runner.passed} passed, {runner.failed} failed, {len(runner.skips)} skipped")
    if total == 0:
        print("doctest: FAIL no tested block found: the docs test would pass without testing anything")
        return 1
    return 1 if runner.failed or stray else 0


if __name__ == "__main__":
    sys.exit(main())
