#!/usr/bin/env bash
# The CUDA kernels through the real CUDA compiler, where nvcc is installed but no GPU is (this
# project's development machine): each .cu file's device code compiled to PTX for Hopper (sm_90,
# the build's architecture), with the flags LibTorch's CMake config gives a GPU machine's build
# (--expt-relaxed-constexpr, --expt-extended-lambda). It catches what the stand-in headers cannot
# (syntax_check.sh): a host-only function called on the device, a device intrinsic misused, a
# template that nvcc alone instantiates wrongly. The host side and ptxas's register allocation
# are left to the GPU machine's build. Without nvcc: skipped (exit 77).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [[ ! -x $nvcc ]]; then
  echo "skipped: no nvcc (set NVCC, put it on PATH or install the CUDA toolkit in /usr/local/cuda)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
shopt -s nullglob
for f in "$root"/vendors/nvidia/plugin/kernels/*.cu "$root"/vendors/nvidia/plugin/base/*.cu "$root"/vendors/nvidia/plugin/data/*.cu; do
  rel=${f#"$root"/}
  if ! (cd "$root" && "$nvcc" -std=c++17 -arch=sm_90 --expt-relaxed-constexpr --expt-extended-lambda -Isrc -Ivendors/nvidia/plugin -ptx \
    "$rel" -o "$work/out.ptx") > "$work/errors" 2>&1; then
    echo "FAILED: nvcc does not compile $rel's device code:" >&2
    cat "$work/errors" >&2
    status=1
  fi
done
((status == 0)) && echo "ok: $("$nvcc" --version | tail -1)"
exit "$status"
