#!/usr/bin/env bash
# fuzz.sh -- builds the libFuzzer targets (tests/fuzz/FuzzCheck.cpp and
# FuzzLsp.cpp) with clang-14, ASan and UBSan in its own build directory (a
# unity build, as every tree of scripts/test.sh, of the compiler side only:
# 87 s on 2 cores, against 340 s one file at a time with the runtime), then
# fuzzes the parser, Sema, passes, dumps and formatter, and at the same time
# the language server, for a bounded number of runs (and, when asked, seconds) each,
# seeded with a copy of examples/*.net and a Net# dictionary. Exits non-zero
# when libFuzzer finds a crash, leak, timeout or broken invariant; the input
# is kept under BUILD_DIR/fuzz-artifacts/. Safe to run again (reconfigures
# and rebuilds only what changed).
#
# Usage: scripts/fuzz.sh [RUNS] [-- extra libFuzzer flags]
# Environment: NETC_FUZZ_RUNS (default 20000), NETC_FUZZ_SECONDS (each
# target stops after this many seconds even short of its runs; default 0:
# no limit), NETC_FUZZ_SEED (default 1),
# NETC_FUZZ_BUILD_DIR (default build-fuzz), NETC_FUZZ_CORPUS (a directory to
# keep the evolving corpus in; default a temporary copy that is removed).
# Replay a saved input: BUILD_DIR/tests/fuzz/netc_fuzz_check FILE
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${NETC_FUZZ_RUNS:-20000}
if [[ $# -gt 0 && $1 != -- ]]; then
  runs=$1
  shift
fi
[[ ${1:-} == -- ]] && shift
[[ $runs =~ ^[0-9]+$ ]] || { echo "fuzz.sh: RUNS must be a number, not '$runs'" >&2; exit 2; }
seconds=${NETC_FUZZ_SECONDS:-0}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz.sh: NETC_FUZZ_SECONDS must be a number, not '$seconds'" >&2; exit 2; }
dir=${NETC_FUZZ_BUILD_DIR:-build-fuzz}

cc=$(command -v clang-14 || true)
cxx=$(command -v clang++-14 || true)
if [[ -z $cc || -z $cxx ]]; then
  echo "fuzz.sh: clang-14 is needed (apt-get install clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi

cmake -S . -B "$dir" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DNETC_FUZZ=ON -DNETC_SANITIZE=address,undefined -DNETC_WITH_CUDA=OFF \
  -DNETC_BUILD_TESTS=ON -DNETC_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null
ninja -C "$dir" netc_fuzz_check netc_fuzz_lsp

# Scratch folders, removed at exit; the front end's fuzzer, stopped at exit
# if still running (an interrupted run).
scratch=()
check_pid=
trap '[[ -n $check_pid ]] && kill "$check_pid" 2>/dev/null; rm -rf "${scratch[@]}"' EXIT
# The corpus: a scratch copy of the examples unless the caller keeps one.
if [[ -n ${NETC_FUZZ_CORPUS:-} ]]; then
  corpus=$NETC_FUZZ_CORPUS
  mkdir -p "$corpus"
else
  corpus=$(mktemp -d "${TMPDIR:-/tmp}/netc-fuzz-corpus.XXXXXX")
  scratch+=("$corpus")
fi
cp examples/*.net "$corpus"/
artifacts=$dir/fuzz-artifacts
mkdir -p "$artifacts"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The two targets fuzz at the same time (one core each where there are two),
# each into its own log, printed once both have ended: the front end (parser,
# Sema, passes, dumps, formatter), then the language server, with the
# examples as documents.
lsp_corpus=$(mktemp -d "${TMPDIR:-/tmp}/netc-fuzz-lsp.XXXXXX")
logs=$(mktemp -d "${TMPDIR:-/tmp}/netc-fuzz-logs.XXXXXX")
scratch+=("$lsp_corpus" "$logs")
cp examples/*.net "$lsp_corpus"/
"$dir/tests/fuzz/netc_fuzz_check" "$corpus" \
  -runs="$runs" -max_total_time="$seconds" -seed="${NETC_FUZZ_SEED:-1}" \
  -dict=tests/fuzz/netsharp.dict -max_len=8192 -timeout=30 -rss_limit_mb=4096 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 "$@" >"$logs/check.log" 2>&1 &
check_pid=$!
lsp_status=0
"$dir/tests/fuzz/netc_fuzz_lsp" "$lsp_corpus" \
  -runs="$runs" -max_total_time="$seconds" -seed="${NETC_FUZZ_SEED:-1}" -max_len=8192 -timeout=30 -rss_limit_mb=4096 \
  -artifact_prefix="$artifacts/lsp-" -print_final_stats=1 "$@" >"$logs/lsp.log" 2>&1 || lsp_status=$?
check_status=0
wait "$check_pid" || check_status=$?
check_pid=
status=0
report() { # report NAME LOG STATUS WHAT
  echo "fuzz.sh: --- $1 ---"
  cat "$2"
  if [[ $3 -ne 0 ]]; then
    echo "fuzz.sh: the $4 failed (exit $3); inputs that fail are in $artifacts/" >&2
    ls -l "$artifacts" >&2 || true
    status=$3
  fi
}
report netc_fuzz_check "$logs/check.log" "$check_status" fuzzer
report netc_fuzz_lsp "$logs/lsp.log" "$lsp_status" "language-server fuzzer"
[[ $status -eq 0 ]] || exit "$status"
echo "fuzz.sh: no failure found (at most $runs runs$( ((seconds)) && echo " or $seconds s") per target; libFuzzer's statistics are above)"
