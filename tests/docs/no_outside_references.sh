#!/usr/bin/env bash
# no_outside_references.sh -- fails when a tracked file of the repository points
# at a document outside it: the language spec, design notes or GPU notes that a
# clone does not have (NETSHARP.md, DESIGN.md, GPU.md, ../shared). The
# repository's own places are docs/language.md, docs/architecture.md and
# docs/gpu.md. Usage: no_outside_references.sh REPOSITORY_ROOT
set -euo pipefail
root=${1:?usage: no_outside_references.sh REPOSITORY_ROOT}
cd "$root"
self=tests/docs/no_outside_references.sh
# The names are split so that this file does not match itself.
pattern='NETSHARP''(\.md| ?§| D[0-9])|DESIGN''(\.md| ?§)|GPU''\.md|\.\./shared|/work/''shared'

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  count=$(git ls-files | wc -l)
  hits=$(git grep -I -n -E "$pattern" -- . ":(exclude)$self" || true)
else  # an exported tree without .git: every regular file outside build folders
  count=$(find . -type f -not -path './build*' -not -path './.git/*' | wc -l)
  hits=$(grep -r -I -n -E --exclude-dir='build*' --exclude-dir=node_modules "$pattern" . |
         grep -v "^./$self:" || true)
fi

status=0
if [[ -n "$hits" ]]; then
  echo "$hits"
  echo "no_outside_references: $(wc -l <<<"$hits") line(s) refer to files outside the repository;"
  echo "point them at docs/language.md, docs/architecture.md or docs/gpu.md instead."
  status=1
else
  echo "no_outside_references: $count files, none refers outside the repository"
fi
exit $status
