#!/usr/bin/env bash
# gpu_check.sh -- everything netc checks on a GPU, in one command, so the day
# a GPU machine is lent it all runs the same way (docs/gpu.md).
#
#   scripts/gpu_check.sh bundle [BUILD_DIR [OUT]]
#     Here (the CUDA toolkit, no GPU needed). Builds netc and the GPU test
#     binary in BUILD_DIR (default build-gpu: Release, sm_90 only, tests and
#     benchmarks off but the GPU tests on) -- or, if BUILD_DIR is a configured
#     tree already holding both binaries, uses them as they are -- and gathers
#     OUT (default BUILD_DIR/gpu-bundle, and OUT.tar.xz): the two binaries,
#     every shared library they need but glibc's (ldd), the examples and test
#     data they read, data/mnist when it is there (scripts/prepare_mnist.sh),
#     bench/compare_gpu.py, bench/main_job_gpu.py and this script. Fails when a
#     library cannot be found, when MPI or LLVM would be bundled (the GPU
#     machine has neither; netc opens its MPI plugin only for --ranks), or
#     when the archive exceeds NETC_BUNDLE_MAX_MB (default 32). With
#     NETC_BUNDLE_NO_BUILD set it builds nothing and exits 77 when the
#     binaries are missing (the CTest test gpu_bundle, on the package tree).
#
#   scripts/gpu_check.sh run [BUNDLE [OUT]]
#     On the GPU machine, from an unpacked bundle (default: the folder this
#     script is in). Puts the cuDNN/cuBLAS/NCCL wheels of the machine's Python
#     on LD_LIBRARY_PATH, then writes into OUT (default $OUT, else
#     BUNDLE/results) at most 8 files, the most the device tool brings back:
#     device.txt (nvidia-smi, then the driver, runtime, cuBLAS and cuDNN as
#     loaded); gpu-tests.log (every GPU test); memcheck.log and racecheck.log
#     (compute-sanitizer over a subset of them); bench.log
#     (bench/compare_gpu.py: netc against PyTorch eager and torch.compile);
#     main-job.log (bench/main_job_gpu.py: the README's main job, 40 epochs
#     of the seed network on data/mnist, to its accuracy, netc with and
#     without --data-on-device against PyTorch, 3 rounds; skipped when the
#     bundle has no data/mnist); and
#     train.log (netc train of LeNet-5 on the MNIST slice on the GPU and on the
#     CPU, then eval on the CPU from the GPU's checkpoint, then the GPU run
#     again as a one-rank NCCL job, --gpus 1, whose checkpoint must be the
#     same bytes; then a 2-stage pipeline, --partition 2, and a layer split
#     over 2 ranks, --split Wide:2, on two GPUs or sharing one through MPI,
#     within float tolerance of one CPU process (accumulating the same
#     micro-batches for the pipeline)); summary.json with each step's status, the benchmark's
#     figures (under "bench") and the main job's (under "main_job").
#     Logs are cut to their last 200 lines. Each step is stopped after
#     NETC_STEP_TIMEOUT seconds (default 240; the sanitizers, the benchmark
#     and the main job get twice that), so a hang costs one step, not the
#     lease; the benchmark's rounds are NETC_BENCH_ROUNDS (default 5).
#     The calibrate step measures the GPU's cost table (netc calibrate
#     --device cuda) into summary.json, for codegen/cost/ (docs/estimate.md).
#     NETC_GPU_CHECK_STEPS names the steps to run (default all: "gpu_tests
#     train calibrate bench main_job memcheck racecheck"; nvidia_smi always runs), so
#     a second try in a lease can redo only what failed.
#
#     compute-sanitizer: memcheck reports CUDA API errors too, and NCCL's
#     initialisation asks for the attributes of its kernels for every
#     architecture, getting "no kernel image is available" for those it was
#     not built for, by design. So memcheck runs the NCCL tests on their own
#     with --report-api-errors no (memory errors are still reported), and
#     the rest with the defaults. racecheck leaves the NCCL tests out: it
#     did not finish NCCL's own kernels in 180 s on the H200, and every
#     kernel of netc's in those tests runs under racecheck in the others.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-}
shift || true

tail_log() { # FILE: keep the last 200 lines
  local f=$1
  if [[ -f $f && $(wc -l <"$f") -gt 200 ]]; then
    tail -n 200 "$f" >"$f.tmp" && mv "$f.tmp" "$f"
  fi
}

bundle() {
  cd "$here/.."
  local dir=${1:-build-gpu}
  local out=${2:-$dir/gpu-bundle}
  local limit=${NETC_BUNDLE_MAX_MB:-32}
  if [[ ! -x $dir/tools/netc/netc || ! -x $dir/tests/gpu/netc_gpu_tests ]]; then
    if [[ -n ${NETC_BUNDLE_NO_BUILD:-} ]]; then
      echo "SKIP: $dir holds no netc and GPU test binary to bundle (NETC_BUNDLE_NO_BUILD is set)"
      exit 77
    fi
    echo "gpu_check.sh: building netc and the GPU tests for sm_90 in $dir" >&2
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNETC_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DNETC_BUILD_TESTS=OFF -DNETC_BUILD_BENCH=OFF -DNETC_BUILD_GPU_TESTS=ON -DNETC_SANITIZE= >/dev/null
    ninja -C "$dir" netc netc_gpu_tests >&2
  fi
  local bins=("$dir/tools/netc/netc" "$dir/tests/gpu/netc_gpu_tests")
  rm -rf "$out" "$out.tar.xz"
  mkdir -p "$out/bin" "$out/lib" "$out/scripts" "$out/bench" "$out/tests/fixtures"
  cp "${bins[@]}" "$out/bin/"
  local missing=0 lib
  while read -r name path; do
    case $name in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libmvec.so* | libpthread.so* | libdl.so* | librt.so*) continue ;;
    esac
    if [[ $path == "not" || -z $path ]]; then
      echo "gpu_check.sh: $name is needed but not found" >&2
      missing=1
      continue
    fi
    case $name in
    libmpi* | libopen-* | libLLVM* | libcuda.so* | libcudart.so* | libcublas* | libcudnn* | libnccl*)
      echo "gpu_check.sh: $name would be bundled; the binaries must not link it" >&2
      missing=1
      continue
      ;;
    esac
    cp -L "$path" "$out/lib/$name"
  done < <(ldd "${bins[@]}" | awk '/=>/ {print $1, $3}' | sort -u)
  ((missing == 0)) || exit 1
  # The bundle's binaries find their libraries next to them.
  for lib in "$out"/lib/*; do strip --strip-unneeded "$lib" 2>/dev/null || true; done
  cp -r examples "$out/examples"
  cp -r tests/fixtures/mnist-slice "$out/tests/fixtures/"
  cp bench/compare_gpu.py bench/main_job_gpu.py bench/torch_reference.py bench/torch_threads.py "$out/bench/"
  cp scripts/gpu_check.sh "$out/scripts/"
  # The README's main job's digits (scripts/prepare_mnist.sh; ~7.5 MiB, ~1.3 MiB in the archive).
  if [[ -d data/mnist ]]; then
    mkdir -p "$out/data" && cp -r data/mnist "$out/data/"
  else
    echo "gpu_check.sh: no data/mnist here (scripts/prepare_mnist.sh makes it); the bundle's main_job step will be skipped" >&2
  fi
  # Every library the binaries need resolves inside the bundle.
  if LD_LIBRARY_PATH="$out/lib" ldd "$out"/bin/* | grep -q 'not found'; then
    echo "gpu_check.sh: the bundle's ldd closure is incomplete:" >&2
    LD_LIBRARY_PATH="$out/lib" ldd "$out"/bin/* | grep 'not found' >&2
    exit 1
  fi
  # xz -2: 13.7 MiB in 6 s here, against 11.8 MiB in 35-50 s at xz's default -6.
  XZ_OPT=-2 tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
  local size_mb
  size_mb=$(($(stat -c %s "$out.tar.xz") / 1048576))
  echo "gpu_check.sh: bundle $out ($(du -sm "$out" | cut -f1) MiB; $out.tar.xz $size_mb MiB):"
  ls "$out/lib" | sed 's/^/  lib\//'
  if ((size_mb > limit)); then
    echo "gpu_check.sh: $out.tar.xz is $size_mb MiB, over NETC_BUNDLE_MAX_MB=$limit" >&2
    exit 1
  fi
}

run_checks() {
  local root=${1:-$(cd "$here/.." && pwd)}
  local out=${2:-${OUT:-$root/results}}
  mkdir -p "$out"
  cd "$root"
  local wheels
  wheels=$(python3 - <<'PY' 2>/dev/null || true
import glob, os
try:
    import nvidia
    base = os.path.dirname(nvidia.__path__[0])
    print(":".join(sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib")))))
except Exception:
    pass
PY
  )
  export LD_LIBRARY_PATH="$root/lib${wheels:+:$wheels}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local limit=${NETC_STEP_TIMEOUT:-240}
  local steps=" ${NETC_GPU_CHECK_STEPS:-gpu_tests train calibrate bench main_job memcheck racecheck} "
  local step
  for step in $steps; do
    case $step in
    gpu_tests | train | calibrate | bench | main_job | memcheck | racecheck) ;;
    *)
      echo "gpu_check.sh: NETC_GPU_CHECK_STEPS names '$step'; the steps are gpu_tests train calibrate bench main_job memcheck racecheck" >&2
      exit 2
      ;;
    esac
  done
  declare -A status=([gpu_tests]=skipped [train]=skipped [calibrate]=skipped [bench]=skipped [main_job]=skipped
    [memcheck]=skipped [racecheck]=skipped)
  wants() { [[ $steps == *" $1 "* ]]; }
  nvidia-smi >"$out/device.txt" 2>&1 && status[nvidia_smi]=ok || status[nvidia_smi]=failed
  {
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1 || true
    timeout "$limit" bin/netc bench examples/mnist.net --device cuda --batch 128 --iterations 1 --repeats 1 \
      --warmup 0 2>&1 | grep -E '^device|error' || true
  } >>"$out/device.txt"
  if wants gpu_tests; then
    timeout "$limit" bin/netc_gpu_tests --source-dir="$root" >"$out/gpu-tests.log" 2>&1 && status[gpu_tests]=ok ||
      status[gpu_tests]=failed
    tail_log "$out/gpu-tests.log"
  fi
  if wants train; then
    (
      # The same training on the GPU and on the CPU (their epoch lines side by
      # side), then the GPU's checkpoint evaluated on the CPU.
      local run=$out/train-run device
      for device in cuda cpu; do
        timeout "$limit" bin/netc train examples/lenet5.net --data tests/fixtures/mnist-slice --device "$device" \
          --epochs 3 --batch 50 --momentum 0.9 --seed 1 --out "$run-$device" || exit 1
      done
      timeout "$limit" bin/netc eval examples/lenet5.net --device cpu --weights "$run-cuda/last.safetensors" \
        --data tests/fixtures/mnist-slice || exit 1
      # A one-rank NCCL job through netc's own launcher (--gpus 1): the whole
      # bucketed path, small buckets so there are several; the same bytes.
      timeout "$limit" bin/netc train examples/lenet5.net --data tests/fixtures/mnist-slice --gpus 1 --bucket-mb 0.05 \
        --epochs 3 --batch 50 --momentum 0.9 --seed 1 --out "$run-nccl" || exit 1
      cmp "$run-cuda/last.safetensors" "$run-nccl/last.safetensors" &&
        echo "netc train --gpus 1 (NCCL, graphs): the same checkpoint bytes as the plain GPU run" || exit 1
      # A 2-stage pipeline (--partition 2, 5 micro-batches of 10), and
      # examples/wide-mlp.net's Wide split over 2 ranks (--split Wide:2): a
      # GPU for each rank through NCCL (--gpus 2) where there are two, else
      # both ranks on the one GPU through MPI where this machine has mpirun
      # (the bundle has no MPI). Each checkpoint must match one CPU process
      # (accumulating the same micro-batches for the pipeline: --batch 10
      # --accumulate 5) within float tolerance. GpuPipeline.* and GpuSplit.*
      # in gpu-tests.log run 2 stages and 2 parts on the one GPU without MPI either way.
      local gpus two pipe=(--epochs 2 --momentum 0.9 --seed 1)
      gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
      if ((gpus >= 2)); then
        two=(--gpus 2)
      elif command -v mpirun >/dev/null; then
        two=(--device cuda)
      else
        echo "netc train --partition 2 and --split Wide:2 on GPUs: skipped: $gpus GPU(s) and no mpirun here (2 ranks" \
          "need a GPU each through NCCL, or MPI to share one); GpuPipeline.* and GpuSplit.* in gpu-tests.log cover" \
          "them on one GPU"
        exit 0
      fi
      close() { # the largest difference of two checkpoints' tensors, relative to each tensor's largest value
        python3 - "$@" <<'PY'
import json, struct, sys
def tensors(path):
    data = open(path, "rb").read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        begin, end = t["data_offsets"]
        raw = data[8 + size + begin:8 + size + end]
        out[name] = struct.unpack("<%df" % (len(raw) // 4), raw)
    return out
gpu, cpu = tensors(sys.argv[1]), tensors(sys.argv[2])
assert gpu.keys() == cpu.keys(), (sorted(gpu), sorted(cpu))
worst = 0.0
for name in cpu:
    scale = max(1e-3, max(abs(v) for v in cpu[name]))
    worst = max(worst, max(abs(a - b) for a, b in zip(gpu[name], cpu[name])) / scale)
print("%s: largest difference %.2e of a tensor's largest value" % (sys.argv[3], worst))
sys.exit(0 if worst < 1e-3 else 1)
PY
      }
      timeout "$limit" bin/netc train examples/lenet5.net --data tests/fixtures/mnist-slice --partition 2 "${two[@]}" \
        --batch 50 --micro-batches 5 "${pipe[@]}" --out "$run-pipe" || exit 1
      timeout "$limit" bin/netc train examples/lenet5.net --data tests/fixtures/mnist-slice --device cpu \
        --batch 10 --accumulate 5 "${pipe[@]}" --out "$run-accumulate" || exit 1
      close "$run-pipe/last.safetensors" "$run-accumulate/last.safetensors" \
        "netc train --partition 2 on GPUs against one CPU process accumulating" || exit 1
      timeout "$limit" bin/netc train examples/wide-mlp.net --data tests/fixtures/mnist-slice --split Wide:2 "${two[@]}" \
        --batch 50 "${pipe[@]}" --out "$run-split" || exit 1
      timeout "$limit" bin/netc train examples/wide-mlp.net --data tests/fixtures/mnist-slice --device cpu \
        --batch 50 "${pipe[@]}" --out "$run-whole" || exit 1
      close "$run-split/last.safetensors" "$run-whole/last.safetensors" \
        "netc train --split Wide:2 on GPUs against one CPU process"
    ) >"$out/train.log" 2>&1 && status[train]=ok || status[train]=failed
    rm -rf "$out"/train-run-*
    tail_log "$out/train.log"
  fi
  # The GPU's cost table (netc calibrate --device cuda), for codegen/cost/ in
  # place of the public figures; its lines go to device.txt, the table into
  # summary.json (under "calibrate").
  if wants calibrate; then
    timeout "$limit" bin/netc calibrate --device cuda -o "$out/cost-gpu.json" --overwrite >>"$out/device.txt" 2>&1 &&
      status[calibrate]=ok || status[calibrate]=failed
  fi
  # The benchmark's and the main job's JSON go into summary.json, not files of
  # their own (the device tool brings back 8 files).
  if wants bench; then
    timeout $((2 * limit)) python3 bench/compare_gpu.py --netc bin/netc --rounds "${NETC_BENCH_ROUNDS:-5}" \
      --json "$out/bench.json" >"$out/bench.log" 2>&1 && status[bench]=ok || status[bench]=failed
    tail_log "$out/bench.log"
  fi
  # The README's main job (40 epochs of the seed network on data/mnist) to its
  # accuracy: netc --data-on-device, netc copying its batches, PyTorch eager.
  if ! wants main_job; then
    :
  elif [[ -d data/mnist ]]; then
    timeout $((2 * limit)) python3 bench/main_job_gpu.py --netc bin/netc --data data/mnist --rounds 3 \
      --json "$out/main-job.json" >"$out/main-job.log" 2>&1 && status[main_job]=ok || status[main_job]=failed
    tail_log "$out/main-job.log"
  else
    echo "skipped: the bundle has no data/mnist (scripts/prepare_mnist.sh makes it before bundling)" >"$out/main-job.log"
  fi
  local sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
  local subset='Networks/GpuParity.EachOpMatchesItsReference/pooling:Networks/GpuParity.EachOpMatchesItsReference/conv2d:Networks/GpuParity.EachOpMatchesItsReference/sparse:Networks/GpuParity.EachOpMatchesItsReference/response_norm:GpuCheckpoints.*:GpuCudnn.*:GpuGraphs.*:Networks/GpuParity.EachOpMatchesItsReference/grouped_maps_in_batch'
  local tool
  for tool in memcheck racecheck; do
    wants "$tool" || continue
    if [[ ! -x $sanitizer ]]; then
      echo "compute-sanitizer not found" >"$out/$tool.log"
      status[$tool]=missing
      continue
    fi
    status[$tool]=ok
    timeout $((2 * limit)) "$sanitizer" --tool "$tool" --error-exitcode 99 bin/netc_gpu_tests --source-dir="$root" \
      --gtest_filter="$subset" >"$out/$tool.log" 2>&1 || status[$tool]=failed
    # NCCL's tests: under memcheck without its API-error reports (above).
    if [[ $tool == memcheck ]]; then
      echo "--- GpuNccl.* (--report-api-errors no: NCCL probes its kernels for other architectures) ---" >>"$out/$tool.log"
      timeout $((2 * limit)) "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 99 bin/netc_gpu_tests \
        --source-dir="$root" --gtest_filter='GpuNccl.*' >>"$out/$tool.log" 2>&1 || status[$tool]=failed
    fi
    tail_log "$out/$tool.log"
  done
  python3 - "$out" "${status[nvidia_smi]}" "${status[gpu_tests]}" "${status[memcheck]}" "${status[racecheck]}" \
    "${status[train]}" "${status[bench]}" "${status[main_job]}" "${status[calibrate]}" <<'PY'
import json, os, sys
out = sys.argv[1]
steps = dict(zip(["nvidia_smi", "gpu_tests", "memcheck", "racecheck", "train", "bench", "main_job", "calibrate"],
                 sys.argv[2:]))
summary = {"steps": steps}
# The benchmark's, the main job's and the cost table's figures live in summary.json only (their logs keep the tables).
for key, name in (("bench", "bench.json"), ("main_job", "main-job.json"), ("calibrate", "cost-gpu.json")):
    path = os.path.join(out, name)
    try:
        summary[key] = json.load(open(path))
    except Exception as error:
        summary[key] = {"error": str(error), "status": steps.get(key)}
    for leftover in (path, path + ".tmp"):
        if os.path.exists(leftover):
            os.remove(leftover)
try:
    summary["gpu"] = open(os.path.join(out, "device.txt")).read().splitlines()[:12]
except Exception:
    pass
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(json.dumps(steps))
PY
  [[ ${status[gpu_tests]} != failed && ${status[train]} != failed && ${status[memcheck]} != failed &&
    ${status[racecheck]} != failed ]]
}

case $mode in
bundle) bundle "$@" ;;
run) run_checks "$@" ;;
*)
  sed -n '2,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
