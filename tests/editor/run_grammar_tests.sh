#!/usr/bin/env bash
# run_grammar_tests.sh -- runs `npm test` of the VS Code extension in
# editors/vscode: the TextMate grammar's snapshot tests (one per examples/*.net)
# and scope unit tests, plus the client's Node tests. Registered with CTest as
# `editor_grammar`. When npm or editors/vscode/node_modules is missing the test
# cannot run: it says why and exits 77, which CTest reports as SKIPPED (never
# as passed). scripts/setup.sh --test installs both.
#
#   tests/editor/run_grammar_tests.sh [repository root]
set -euo pipefail

here=.
if [[ ${BASH_SOURCE[0]} == */* ]]; then here=${BASH_SOURCE[0]%/*}; fi
root=${1:-$(cd "$here/../.." && pwd)}
dir=$root/editors/vscode
skip=77

if ! command -v npm >/dev/null 2>&1; then
  echo "editor_grammar: SKIPPED: npm is not installed, so the editor grammar tests cannot run." >&2
  echo "editor_grammar: run scripts/setup.sh (installs Node.js, npm and editors/vscode/node_modules)." >&2
  exit "$skip"
fi
if [[ ! -d $dir/node_modules ]]; then
  echo "editor_grammar: SKIPPED: $dir/node_modules is missing, so the editor grammar tests cannot run." >&2
  echo "editor_grammar: run scripts/setup.sh, or 'npm ci --no-audit --no-fund' in editors/vscode." >&2
  exit "$skip"
fi
if [[ $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]]; then
  echo "editor_grammar: warning: node_modules is older than package-lock.json; scripts/setup.sh updates it." >&2
fi

cd "$dir"
exec npm test
