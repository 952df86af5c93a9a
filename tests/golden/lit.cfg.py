# lit.cfg.py -- the golden test suite: every .net and .test file under this
# folder is a test; %netc is the built compiler, FileCheck and not come from LLVM.
import os
import lit.formats

config.name = "netc-golden"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".net", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs"]
config.substitutions.append(("%netc", config.netc))
config.substitutions.append(("%examples", config.examples))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("not ", os.path.join(os.path.dirname(config.filecheck), "not") + " "))
config.environment["NO_COLOR"] = "1"
# The kernels a run picks: OpenBLAS's (OPENBLAS_CORETYPE) and netc's own
# (NETC_CPU_ISA), which scripts/test.sh's second pass forces to the generic ones.
for name in ("OPENBLAS_CORETYPE", "NETC_CPU_ISA"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
# The other tasks netc assumes are running (for --threads 0, and whether a
# cost table was measured beside other work): none, so that what a test
# sees does not depend on the tests running beside it (ctest -j2).
config.environment["NETC_OTHER_TASKS"] = "0"
# netc's cache of this machine's cost table, which scripts/test.sh fills
# before the tests run (lit passes no HOME: without it the cache is off).
if "NETC_CACHE_DIR" in os.environ:
    config.environment["NETC_CACHE_DIR"] = os.environ["NETC_CACHE_DIR"]
# netc build and --emit=llvm need the LLVM plugin (NETC_WITH_LLVM): their tests say REQUIRES: netc-llvm.
if config.netc_llvm.upper() in ("ON", "TRUE", "1", "YES"):
    config.available_features.add("netc-llvm")
# Tests of what netc says on a CPU with AVX2 (or wider) say REQUIRES: cpu-avx2; with
# AVX512-BF16, cpu-avx512-bf16.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line.split() for line in cpuinfo if line.startswith("flags")), [])
        if "avx2" in flags:
            config.available_features.add("cpu-avx2")
        # --precision bf16 runs here (runtime/cpu/DenseKernelChoice.h, bf16Refusal).
        if "avx512_bf16" in flags and {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma"} <= set(flags):
            config.available_features.add("cpu-avx512-bf16")
except OSError:
    pass
# Tests that make device nodes (mknod) say REQUIRES: root.
if os.geteuid() == 0:
    config.available_features.add("root")
