#!/usr/bin/env python3
"""check_layering_test.py -- proves that tests/check_layering.py fails on a
forbidden include: it runs the checker on small trees made in a temporary
folder and expects exit 1 naming the offending file and header (api/ including
a CPU backend header; runtime/core including an optimizer header), and exit 0
for a tree whose only such include is in api/Backends.cpp, the allowed
exception.

Usage: check_layering_test.py CHECKER   (the path of check_layering.py)
"""
import pathlib
import subprocess
import sys
import tempfile

CHECKER = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).with_name("check_layering.py"))
failures = []


def run(files):
    """Runs the checker on a tree holding `files` (path -> text)."""
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = pathlib.Path(root, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        done = subprocess.run([sys.executable, str(CHECKER), root], capture_output=True, text=True)
        return done.returncode, done.stdout + done.stderr


def expect(name, files, code, lines):
    got, output = run(files)
    if got != code:
        failures.append(f"{name}: exit {got}, expected {code}; output:\n{output}")
    for line in lines:
        if line not in output.splitlines():
            failures.append(f"{name}: no line {line!r} in the output:\n{output}")


ALLOWED = {
    "api/Backends.cpp": '#include "api/Backends.h"\n#include "runtime/cpu/CpuBackend.h"\n',
    "api/Training.cpp": '#include "runtime/core/Backend.h"\n#include "runtime/train/Trainer.h"\n',
    "runtime/core/Backend.h": '#include "codegen/Plan.h"\n',
}
expect("allowed", ALLOWED, 0, ["layering: ok"])
expect("api includes a CPU backend header",
       {**ALLOWED, "api/Bad.cpp": '// a file of the API\n#include "runtime/cpu/Kernels.h"\n'}, 1,
       ["api/Bad.cpp: includes <runtime/cpu/Kernels.h> (api/ must not include runtime/cpu/...)"])
expect("api includes a CUDA backend header",
       {**ALLOWED, "api/Inference.cpp": '#  include <runtime/cuda/CudaBackend.h>\n'}, 1,
       ["api/Inference.cpp: includes <runtime/cuda/CudaBackend.h> (api/ must not include runtime/cuda/...)"])
expect("runtime/core includes an optimizer header",
       {**ALLOWED, "runtime/core/Backend.h": '#include "runtime/optim/Optimizer.h"\n'}, 1,
       ["runtime/core/Backend.h: includes <runtime/optim/Optimizer.h> (runtime/core/ must not include "
        "runtime/optim/...)"])

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("check_layering_test: ok")
