#!/usr/bin/env python3
"""long_lines.py -- shortens the very long lines of a golden dump (the LLVM
module's constant tables: up to 170,000 characters on one line) to their
start, their end, their length and a SHA-256 digest of the whole line, so
that FileCheck compares them in microseconds instead of minutes (its
full-line match is slow on such lines) and a changed table still fails.
A filter (stdin to stdout), run both by the tests and by update_goldens.py.
"""
import hashlib
import sys

LIMIT = 400  # longer lines are digested


def shorten(line):
    if len(line) <= LIMIT:
        return line
    digest = hashlib.sha256(line.encode()).hexdigest()[:16]
    return f"{line[:100]} ... {line[-40:]}  <{len(line)} characters, sha256 {digest}>"


def main():
    for line in sys.stdin:
        sys.stdout.write(shorten(line.rstrip("\n")) + "\n")


if __name__ == "__main__":
    main()
