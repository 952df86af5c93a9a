#!/usr/bin/env python3
"""doctest_test.py -- checks that the docs test (doctest.py) gives the right verdicts.

Runs doctest.py on fixtures/verdicts.md (one passing transcript with tolerated differences, one
passing Net# file, one failing transcript, one skipped long block, one block that is not run) and
on small markdown files made here, and checks each verdict, the file:line of the failure, the
printed skip, the counts and the exit status: so the docs test cannot pass vacuously.

Usage: doctest_test.py DOCTEST_PY NETC
"""

import os
import subprocess
import sys
import tempfile

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def run(doctest, netc, *args):
    r = subprocess.run([sys.executable, doctest, "--netc", netc, *args], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def line_of(path, text):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise AssertionError(f"{text!r} not in {path}")


def main():
    doctest, netc = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    fixture = os.path.join(here, "fixtures", "verdicts.md")
    rel = os.path.relpath(fixture, repo)

    # 1. The fixture: 2 passed, 1 failed, 1 skipped; the failure located and diffed; exit 1.
    status, out = run(doctest, netc, "--repo", repo, "--no-coverage-check", fixture)
    print(out)
    check(status == 1, f"fixture: exit status {status}, expected 1 (one block fails)")
    check("4 tested block(s) in 1 of 1 file(s): 2 passed, 1 failed, 1 skipped" in out, "fixture: counts")
    fail_line = line_of(fixture, '$ echo "loss 0.25"')
    check(f"FAIL {rel}:{fail_line}: $ echo \"loss 0.25\"" in out, f"fixture: the failure at {rel}:{fail_line}")
    check("-loss 0.26\n+loss 0.25" in out, "fixture: the unified diff of the failure")
    check(out.count("FAIL ") == 1, "fixture: exactly one failure")
    skip_line = line_of(fixture, "```console doctest long")
    check(f"SKIP {rel}:{skip_line}: long" in out, f"fixture: the skip of {rel}:{skip_line} printed with its reason")
    check("never run" not in out.replace('echo "never run"', ""), "fixture: the long block was not run")

    # 2. The same fixture with --long: the long block now runs and fails (its output is wrong).
    status, out = run(doctest, netc, "--repo", repo, "--no-coverage-check", "--long", fixture)
    check(status == 1 and "2 passed, 2 failed, 0 skipped" in out, "fixture --long: the long block runs")

    with tempfile.TemporaryDirectory() as d:
        def write(name, text):
            p = os.path.join(d, name)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
            return p

        # 3. Only passing and skipped blocks: exit 0, the skip still printed.
        ok = write("ok.md", "```console doctest\n$ echo hi\nhi\n```\n\n```console doctest needs=gpu long\n$ x\n```\n")
        status, out = run(doctest, netc, "--repo", d, "--no-coverage-check", ok)
        check(status == 0 and "1 passed, 0 failed, 1 skipped" in out and "SKIP ok.md:" in out,
              f"passing + skipped: exit 0 with the skip printed (got {status}):\n{out}")

        # 4. No tested block at all: the test must fail, not pass vacuously.
        empty = write("empty.md", "# nothing\n\n```sh\necho hi\n```\n")
        status, out = run(doctest, netc, "--repo", d, "--no-coverage-check", empty)
        check(status == 1 and "no tested block found" in out, f"no block: exit 1 (got {status}):\n{out}")

        # 5. A tested block in a markdown file the run does not read fails the run.
        stray = write("other/stray.md", "```console doctest\n$ echo hi\nhi\n```\n")
        status, out = run(doctest, netc, "--repo", d, ok)
        check(status == 1 and "other/stray.md: 1 tested block(s) in a file the docs test does not read" in out,
              f"stray block: exit 1 (got {status}):\n{out}")
        os.remove(stray)

        # 6. An unknown modifier is an error, not a silent skip; a net show without its text block too.
        typo = write("typo.md", "```console doctest needs=mnsit\n$ echo hi\nhi\n```\n")
        status, out = run(doctest, netc, "--repo", d, "--no-coverage-check", typo)
        check(status == 1 and "unknown modifier(s) needs=mnsit" in out, f"typo: exit 1 (got {status}):\n{out}")
        lone = write("lone.md", "```net show\ninput I [2];\noutput O [1] from I all;\n```\n")
        status, out = run(doctest, netc, "--repo", d, "--no-coverage-check", lone)
        check(status == 1 and "must be followed by a ```text block" in out, f"net show alone: exit 1 (got {status})")

        # 7. A Net# file with a diagnostic fails as ```net and passes as ```net diagnostics with netc's text.
        bad = "input I [2];\noutput O [1] from J all;\n"
        plain = write("plain.md", "```net\n" + bad + "```\n")
        status, out = run(doctest, netc, "--repo", d, "--no-coverage-check", plain)
        check(status == 1 and "must accept this example" in out, f"bad net: exit 1 (got {status})")
        with tempfile.TemporaryDirectory() as w:
            with open(os.path.join(w, "example.net"), "w") as f:
                f.write(bad)
            text = subprocess.run([netc, "check", "example.net"], cwd=w, capture_output=True, text=True).stderr
        diag = write("diag.md", "```net diagnostics\n" + bad + "```\n\n```text\n" + text + "```\n")
        status, out = run(doctest, netc, "--repo", d, "--no-coverage-check", diag)
        check(status == 0 and "1 passed" in out, f"net diagnostics: exit 0 (got {status}):\n{out}")

    for f in failures:
        print("doctest_test: FAILED:", f)
    print("doctest_test:", "all checks passed" if not failures else f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
