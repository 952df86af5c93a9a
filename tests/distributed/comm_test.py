#!/usr/bin/env python3
"""comm_test.py -- the MPI communicator itself, between real processes: runs one scenario of
netc_comm_scenarios (tests/distributed/CommScenarios.cpp) under `mpirun -np N` and checks that every
rank printed "rank R: ok SCENARIO" (and, for the fault scenarios, that the job ended instead of
hanging: they leave MPI without finalising, so mpirun's own status is not the verdict).

Usage: comm_test.py --scenarios BINARY --scenario NAME --ranks N [--timeout SECONDS]
Exits 77 (CTest SKIP, with the reason) when mpirun is missing or the plugin was not built.
"""

import argparse
import os
import shutil
import subprocess
import sys

SKIP = 77


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", required=True)
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--timeout", default="60")
    args = parser.parse_args()
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("comm_test: SKIP: mpirun is not installed (Debian: openmpi-bin; scripts/setup.sh --test installs it)")
        return SKIP
    command = [mpirun, "-np", str(args.ranks), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    command += [args.scenarios, args.scenario, args.timeout]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        print(f"comm_test: FAILED: `{' '.join(command)}` hung for 300 s")
        return 1
    print(result.stdout + result.stderr)
    missing = [r for r in range(args.ranks) if f"rank {r}: ok {args.scenario}" not in result.stderr]
    if missing:
        print(f"comm_test: FAILED: ranks {missing} did not report 'ok {args.scenario}' (exit {result.returncode})")
        return 1
    print("comm_test: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
