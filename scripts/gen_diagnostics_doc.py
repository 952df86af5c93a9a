#!/usr/bin/env python3
"""gen_diagnostics_doc.py -- writes docs/diagnostics.md from the one
catalogue, support/Diagnostics.def, so the documentation cannot drift from
the compiler. A golden test checks the committed file is current.

Usage: scripts/gen_diagnostics_doc.py [OUTPUT]   (default: docs/diagnostics.md)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEADER = """# netc diagnostics

Every problem netc reports has a stable code. This page is generated from
`support/Diagnostics.def` by `scripts/gen_diagnostics_doc.py`; `{}` marks where
the message names the things involved. `netc check --format json` reports the
code in `"code"`. Codes never change meaning; retired codes are not reused.

| code | severity | message |
|---|---|---|
"""
SECTIONS = {"NS00": "files", "NS01": "lexing and syntax", "NS02": "consts and expressions",
            "NS03": "layers and structure", "NS04": "bundle attributes and geometry",
            "NS05": "share", "NS06": "limits"}


def main():
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs/diagnostics.md"
    text = (ROOT / "support/Diagnostics.def").read_text()
    rows = []
    for m in re.finditer(r'DIAG\((\w+),\s*(\w+),\s*"(NS\d+)",\s*"((?:[^"\\]|\\.)*)"\)', text):
        _, severity, code, message = m.groups()
        message = message.replace("{{", "{").replace("}}", "}").replace("|", "\\|")
        rows.append((code, severity.lower(), message))
    body = HEADER + "".join(f"| {c} | {s} | {msg} |\n" for c, s, msg in sorted(rows))
    body += "\nRanges: " + ", ".join(f"{k}xx {v}" for k, v in SECTIONS.items()) + ".\n"
    out.write_text(body)


if __name__ == "__main__":
    main()
