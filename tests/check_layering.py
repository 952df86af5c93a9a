#!/usr/bin/env python3
"""check_layering.py -- enforces the include rules of docs/architecture.md §Pipeline and layering:
the compiler side (support, frontend, ir, passes, lsp, grammar) never
includes runtime headers; only frontend/Parser.cpp sees ANTLR; support and
ir do not include the front end or passes; the public headers in
include/netc include nothing of netc's internals; api/ reaches the backends
only through runtime/core (api/Backends.cpp, which registers the built-in
ones, excepted); runtime/core (the Backend interface) does not include the
optimizers; runtime/cuda does not include the CPU backend; runtime/comm
(the Communicator) knows nothing of plans, backends
or training, and its MPI plugin is reached only through its loader. Exits 1
listing offenders.

Usage: check_layering.py [ROOT]   (ROOT: the source tree; default: this repository)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)

# folder -> include prefixes it must not use
FORBIDDEN = {
    "support": ["frontend/", "ir/", "passes/", "codegen/", "api/", "runtime/", "lsp/", "antlr4", "Net"],
    "ir": ["frontend/", "passes/", "codegen/", "api/", "runtime/", "lsp/", "antlr4", "Net"],
    "frontend": ["passes/", "codegen/", "api/", "runtime/", "lsp/"],
    "passes": ["frontend/", "codegen/", "api/", "runtime/", "lsp/", "antlr4", "Net"],
    "codegen": ["frontend/", "passes/", "api/", "runtime/", "lsp/", "antlr4", "Net"],
    # The runtime sees the Plan (and the IR enums it names), never the front end.
    "runtime": ["frontend/", "passes/", "api/", "lsp/", "antlr4", "Net"],
    "lsp": ["runtime/"],
    "include/netc": ["support/", "frontend/", "ir/", "passes/", "codegen/", "api/", "runtime/", "lsp/", "antlr4"],
    # The API reaches backends through the registry and interface of runtime/core,
    # and the MPI communicator only through its loader (runtime/comm/OpenCommunicator.h).
    "api": ["runtime/cpu/", "runtime/cuda/", "runtime/comm/mpi/"],
    "tools": ["runtime/comm/mpi/"],
    # The communicators move bytes: no plans, backends or training loop.
    "runtime/comm": ["codegen/", "runtime/core/", "runtime/cpu/", "runtime/cuda/", "runtime/data/",
                     "runtime/optim/", "runtime/train/"],
    # The Backend interface knows plans, not the optimizers' host code.
    "runtime/core": ["runtime/optim/"],
    # The CUDA backend shares the element math of runtime/core, never the CPU backend's code.
    "runtime/cuda": ["runtime/cpu/"],
}
# file -> the prefixes it may include although its folder must not.
EXCEPTIONS = {
    # The one file that registers the built-in backends (api/Backends.h).
    "api/Backends.cpp": ["runtime/cpu/", "runtime/cuda/"],
}
# The files that drive the generated parser and lexer (see frontend/Lexer.h).
ANTLR_ALLOWED = {"frontend/Parser.cpp", "frontend/ParseTreeToAst.h", "frontend/ParseTreeToAst.cpp", "frontend/Lexer.cpp", "frontend/ReferenceLexer.cpp",
                 "frontend/TokenArrayStream.h", "frontend/TokenArrayStream.cpp"}

problems = []
for folder, banned in FORBIDDEN.items():
    base = ROOT / folder
    if not base.is_dir():
        continue
    for path in sorted(base.rglob("*")):
        if path.suffix not in {".h", ".hpp", ".cpp", ".cc", ".def", ".cu", ".cuh"}:
            continue
        rel = path.relative_to(ROOT).as_posix()
        for header in INCLUDE.findall(path.read_text(errors="replace")):
            for prefix in banned:
                if prefix in EXCEPTIONS.get(rel, []):
                    continue
                if header.startswith(prefix) and not (rel in ANTLR_ALLOWED and prefix in ("antlr4", "Net")):
                    problems.append(f"{rel}: includes <{header}> ({folder}/ must not include {prefix}...)")
for path in sorted((ROOT / "frontend").glob("*")):
    rel = path.relative_to(ROOT).as_posix()
    if rel not in ANTLR_ALLOWED and path.suffix in {".h", ".cpp"}:
        for header in INCLUDE.findall(path.read_text()):
            if header.startswith(("antlr4", "NetSharp")):
                problems.append(f"{rel}: includes <{header}> (only the parser driver files may see ANTLR)")

if problems:
    print("\n".join(problems))
    sys.exit(1)
print("layering: ok")
