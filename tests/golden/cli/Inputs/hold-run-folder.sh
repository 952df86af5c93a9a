#!/usr/bin/env bash
# hold-run-folder.sh NETC NET DATA DIR -- starts a long `netc train` into DIR
# in the background, waits (at most 60 s) until it holds the folder (its
# lock file names it) and has written its first checkpoint, prints its pid
# and leaves it running; the caller stops it (kill -TERM) and waits for it.
set -euo pipefail
netc=$1 net=$2 data=$3 dir=$4
"$netc" train "$net" --data "$data" --epochs 100000 --batch 10 --seed 3 --threads 1 --cost-model none \
  --out "$dir" --quiet > "$dir.holder.out" 2>&1 &
holder=$!
for _ in $(seq 600); do
  if grep -q "^pid $holder " "$dir/.netc-run.lock" 2>/dev/null && [[ -s $dir/last.safetensors ]]; then
    echo "$holder"
    exit 0
  fi
  kill -0 "$holder" 2>/dev/null || { echo "the holder ended:" >&2; cat "$dir.holder.out" >&2; exit 1; }
  sleep 0.1
done
kill -KILL "$holder"
echo "the holder did not take the folder and write a checkpoint within 60 s" >&2
exit 1
