#!/usr/bin/env bash
# output_folder_test.sh -- where `netc build -o DIR` can put a library, and
# that two builds at once leave one whole set (api/LibraryFolder.h):
#   - into a mount point, a symbolic link to another filesystem (both were
#     impossible: "Invalid cross-device link"), and a read-only mount (a
#     clear error, nothing written), in a private mount namespace of tmpfs
#     mounts under WORK_DIR;
#   - two builds of different checkpoints into one folder at once, with every
#     rename slowed by 0.2 s (strace -e inject), into a new folder and into
#     the existing one: each file must then be the same build's (byte for
#     byte one of the two reference builds).
# Exits 77 (a CTest skip, saying why) without unshare -m (root) or strace.
# Usage: output_folder_test.sh NETC SOURCE_DIR WORK_DIR
set -euo pipefail
netc=$1 src=$2 work=$3
if ! command -v unshare >/dev/null || ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: cannot make a private mount namespace here (unshare -m needs root): mount points cannot be tested"
  exit 77
fi
if ! command -v strace >/dev/null; then
  echo "SKIP: strace is not installed (scripts/setup.sh --test installs it): concurrent builds cannot be slowed"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
net=$src/tests/golden/cli/Inputs/tiny-mnist.net
for seed in 3 4; do
  "$netc" train "$net" --data "$src/tests/fixtures/mnist-slice" --epochs 1 --batch 50 --threads 1 --seed $seed \
    --out "$work/run$seed" --quiet > /dev/null 2>&1
  "$netc" build "$net" --weights "$work/run$seed/last.safetensors" -o "$work/ref$seed" --quiet
done
cmp -s "$work/ref3/tiny_mnist.o" "$work/ref4/tiny_mnist.o" && { echo "FAIL: the two checkpoints build the same object"; exit 1; }

cat > "$work/mounts.sh" <<'INNER'
set -euo pipefail
netc=$1 net=$2 work=$3
mkdir -p "$work/mnt" "$work/other" "$work/ro"
mount -t tmpfs none "$work/mnt"
mount -t tmpfs none "$work/other"
mount -t tmpfs -o ro none "$work/ro"
"$netc" build "$net" --weights "$work/run3/last.safetensors" -o "$work/mnt" --quiet ||
  { echo "FAIL: cannot build into a mount point"; exit 1; }
cmp "$work/mnt/tiny_mnist.o" "$work/ref3/tiny_mnist.o"
ln -s "$work/other" "$work/link"
"$netc" build "$net" --weights "$work/run3/last.safetensors" -o "$work/link" --quiet ||
  { echo "FAIL: cannot build through a link to another filesystem"; exit 1; }
cmp "$work/other/libtiny_mnist.so" "$work/ref3/libtiny_mnist.so"
set +e
"$netc" build "$net" --weights "$work/run3/last.safetensors" -o "$work/ro" 2> "$work/ro.err"
rc=$?
set -e
[[ $rc == 1 ]] || { echo "FAIL: a read-only mount gave exit $rc, not 1"; cat "$work/ro.err"; exit 1; }
grep -q "netc: error: netc build: cannot write the library into .*/ro: Read-only file system" "$work/ro.err" ||
  { echo "FAIL: the read-only mount's message:"; cat "$work/ro.err"; exit 1; }
if grep -q "cross-device" "$work/ro.err"; then echo "FAIL: cross-device"; exit 1; fi
echo "ok: mount point, link to another filesystem, read-only mount ($(cat "$work/ro.err"))"
INNER
unshare -m --propagation private bash "$work/mounts.sh" "$netc" "$net" "$work"

# LeakSanitizer cannot work under ptrace: a sanitizer build's leak check is
# off for the traced builds (the other tests cover the same code).
slow=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -qq -o /dev/null -e trace=rename,renameat,renameat2 -e inject=rename,renameat,renameat2:delay_enter=200000)
check_one_set() { # every file in $1 is one reference build's
  local folder=$1 from=""
  for seed in 3 4; do
    local all=yes
    for file in README.md tiny_mnist.h tiny_mnist.o libtiny_mnist.a libtiny_mnist.so; do
      cmp -s "$folder/$file" "$work/ref$seed/$file" || all=no
    done
    [[ $all == yes ]] && from=$seed
  done
  [[ -n $from ]] || { echo "FAIL: $folder mixes the files of two builds:"; for f in "$folder"/*; do md5sum "$f" "$work"/ref*/"$(basename "$f")"; done; exit 1; }
  echo "ok: $folder holds build $from's whole set"
}
for round in new existing; do
  [[ $round == new ]] && rm -rf "$work/shared"
  "${slow[@]}" "$netc" build "$net" --weights "$work/run3/last.safetensors" -o "$work/shared" --quiet 2> "$work/b3.err" &
  first=$!
  "${slow[@]}" "$netc" build "$net" --weights "$work/run4/last.safetensors" -o "$work/shared" --quiet 2> "$work/b4.err" || { cat "$work/b4.err"; exit 1; }
  wait $first || { cat "$work/b3.err"; exit 1; }
  check_one_set "$work/shared"
  if ls -a "$work/shared" "$work" | grep -q '^\.netc-build-'; then echo "FAIL: a staging folder was left"; exit 1; fi
done
echo "output_folder_test: passed"
