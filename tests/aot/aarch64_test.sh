#!/usr/bin/env bash
# aarch64_test.sh -- `netc build --target aarch64-linux-gnu` on this (x86-64)
# machine: the object and the shared library are AArch64 ELF files (checked
# with llvm-readelf: class, machine, type), the library exports the four entry
# points and nothing else of the network, and the header is the same as a
# host build's. A cross build needs no cross toolchain: LLVM compiles, lld-19
# links. The same for riscv64 and powerpc64le, the other architectures netc
# build compiles for (ELF class and machine). Exits 77 (a CTest skip) without
# llvm-readelf.
# Usage: aarch64_test.sh NETC SOURCE_DIR WORK_DIR
set -euo pipefail
netc=$1 src=$2 work=$3
readelf=$(command -v llvm-readelf-19 || command -v /usr/lib/llvm-19/bin/llvm-readelf || true)
if [[ -z $readelf ]]; then
  echo "SKIP: llvm-readelf (LLVM 19) is not installed"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
"$netc" train "$src/examples/lenet5.net" --data "$src/tests/fixtures/mnist-slice" --epochs 1 --batch 50 --threads 1 \
  --seed 1 --out "$work/run" --quiet > /dev/null
"$netc" build "$src/examples/lenet5.net" --weights "$work/run/last.safetensors" -o "$work/arm" \
  --target aarch64-linux-gnu --cpu neoverse-n1 | tee "$work/build.out"
grep -q '^built lenet5 for aarch64-unknown-linux-gnu (cpu neoverse-n1)' "$work/build.out" ||
  { echo "FAIL: the summary does not name the target and CPU"; exit 1; }
for file in lenet5.o liblenet5.so; do
  "$readelf" --file-header "$work/arm/$file" > "$work/$file.header"
  grep -Eq 'Class: +ELF64' "$work/$file.header" || { echo "FAIL: $file is not ELF64"; cat "$work/$file.header"; exit 1; }
  grep -Eq 'Machine: +AArch64' "$work/$file.header" || { echo "FAIL: $file is not AArch64"; cat "$work/$file.header"; exit 1; }
done
grep -Eq 'Type: +REL' "$work/lenet5.o.header" || { echo "FAIL: lenet5.o is not relocatable"; exit 1; }
grep -Eq 'Type: +DYN' "$work/liblenet5.so.header" || { echo "FAIL: liblenet5.so is not a shared object"; exit 1; }
# Exported: the four entry points, defined; the network's internals are local.
"$readelf" --dyn-syms --wide "$work/arm/liblenet5.so" > "$work/dynsyms"
for entry in lenet5_infer lenet5_infer_normalized lenet5_infer_with_scratch lenet5_infer_normalized_with_scratch; do
  grep -Eq "FUNC +GLOBAL +DEFAULT +[0-9]+ +$entry\$" "$work/dynsyms" || { echo "FAIL: $entry is not exported"; cat "$work/dynsyms"; exit 1; }
done
if grep -E 'GLOBAL +DEFAULT +[0-9]+ ' "$work/dynsyms" | grep -v ' lenet5_infer'; then
  echo "FAIL: the library exports more than its entry points (above)"; exit 1
fi
# Needed at load time: libm and libc only (the symbols left undefined).
undefined=$(awk '$7 == "UND" && $8 != "" {print $8}' "$work/dynsyms")
for symbol in $undefined; do
  case $symbol in
  expf | tanhf | log1pf | powf | memset | memcpy) ;;
  *) echo "FAIL: the library needs $symbol, which is not libc's or libm's"; exit 1 ;;
  esac
done
"$readelf" --file-header "$work/arm/liblenet5.a" > "$work/archive.header"
grep -Eq 'Machine: +AArch64' "$work/archive.header" || { echo "FAIL: liblenet5.a is not AArch64"; exit 1; }
# The header does not depend on the target.
"$netc" build "$src/examples/lenet5.net" --weights "$work/run/last.safetensors" -o "$work/host" --quiet
cmp "$work/arm/lenet5.h" "$work/host/lenet5.h" || { echo "FAIL: the header differs between targets"; exit 1; }
# The other architectures netc build compiles for (codegen/llvm/CompileObject.cpp):
# a 64-bit relocatable object and shared library of that machine each.
for pair in riscv64-linux-gnu:RISC-V powerpc64le-linux-gnu:PowerPC64; do
  triple=${pair%%:*} machine=${pair#*:}
  "$netc" build "$src/examples/lenet5.net" --weights "$work/run/last.safetensors" -o "$work/$triple" \
    --target "$triple" --quiet
  for file in lenet5.o liblenet5.so; do
    "$readelf" --file-header "$work/$triple/$file" > "$work/$triple.$file.header"
    grep -Eq 'Class: +ELF64' "$work/$triple.$file.header" &&
      grep -Eq "Machine: +$machine" "$work/$triple.$file.header" ||
      { echo "FAIL: $triple's $file is not an ELF64 $machine file"; cat "$work/$triple.$file.header"; exit 1; }
  done
  cmp "$work/$triple/lenet5.h" "$work/host/lenet5.h" || { echo "FAIL: the header differs for $triple"; exit 1; }
done
echo "aarch64_test: passed ($(wc -c < "$work/arm/liblenet5.so") bytes of AArch64 library; riscv64 and powerpc64le built)"
