#!/usr/bin/env bash
# The CUDA kernels' C++, checked on a machine without nvcc: each .cu file of the models' kernels and
# of the JPEG crop, its launches (<<<...>>>) made plain calls, goes through g++ -fsyntax-only against
# stand-ins for CUDA's headers (tests/cuda_host/stubs), and so does NVIDIA's nvJPEG decoder.
# Templates are instantiated, so a misspelt member, a wrong argument or a slip in a refactor fails
# here, before a GPU machine's build. Device semantics (what nvcc and the GPU tests check) are not.
# No -Wshadow or unused warnings: `extern __shared__` arrays and launch configurations, made host
# C++, would raise them falsely.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
compiler=${CXX:-g++}
status=0
for f in "$root"/vendors/nvidia/plugin/kernels/*.cu "$root"/vendors/nvidia/plugin/data/gpu_crop.cu; do
  rel=${f#"$root"/}
  host=$work/$(basename "$f").cpp
  # A launch's <<<...>>> becomes a space (its line breaks kept, so the errors' line numbers hold).
  { printf '#line 1 "%s"\n' "$rel"; perl -0777 -pe 's/<<<(.*?)>>>/" " . ("\n" x ($1 =~ tr!\n!!))/gse' "$f"; } > "$host"
  if ! "$compiler" -std=c++17 -fsyntax-only -Wall -Wextra -Wno-unused -Wno-unused-parameter -Wno-unknown-pragmas \
    -Werror -I"$root/tests/cuda_host/stubs" -I"$root/src" -I"$root/vendors/nvidia/plugin" "$host" 2> "$work/errors"; then
    echo "FAILED: $rel is not valid C++ against the stand-in CUDA headers (tests/cuda_host/stubs):" >&2
    cat "$work/errors" >&2
    status=1
  fi
done
# NVIDIA's JPEG decoder (vendors/nvidia/plugin/data), which this machine's build leaves out.
if ! "$compiler" -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I"$root/tests/cuda_host/stubs" \
  -I"$root/src" -I"$root/vendors/nvidia/plugin" "$root/vendors/nvidia/plugin/data/nvjpeg_decoder.cpp" 2> "$work/errors"; then
  echo "FAILED: vendors/nvidia/plugin/data/nvjpeg_decoder.cpp is not valid C++ against the stand-in headers:" >&2
  cat "$work/errors" >&2
  status=1
fi
# NVIDIA's plug-in (vendors/nvidia/plugin/nvidia_*.cpp: its operators' kernels, NCCL, its probes; not
# the TensorRT engine, whose headers no machine here has) against this machine's LibTorch headers
# where they include c10/cuda (Debian's do), with stand-ins for the CUDA runtime's headers they
# include (tests/cuda_host/torch_stubs).
torch_api=$(dirname "$(find /usr/include /usr/local/include -maxdepth 6 -path '*torch/csrc/api/include/torch/torch.h' 2>/dev/null | head -1)")
if [[ -f /usr/include/c10/cuda/CUDAGuard.h && -n $torch_api && $torch_api != . ]]; then
  # One translation unit of all of them: LibTorch's headers are most of the time.
  for f in "$root"/vendors/nvidia/plugin/nvidia_*.cpp; do printf '#include "%s"\n' "$f"; done > "$work/nvidia_plugin.cpp"
  if ! "$compiler" -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I"$root/tests/cuda_host/torch_stubs" \
    -I"$root/tests/cuda_host/stubs" -I"$root/src" -I"$root/vendors/nvidia/plugin" -isystem "$(dirname "$torch_api")" \
    "$work/nvidia_plugin.cpp" 2> "$work/errors"; then
    echo "FAILED: vendors/nvidia/plugin is not valid C++ against LibTorch's headers and the stand-in CUDA headers:" >&2
    cat "$work/errors" >&2
    status=1
  fi
else
  echo "(LibTorch's c10/cuda headers not found: NVIDIA's plug-in not checked)"
fi
((status == 0)) && echo "ok"
exit "$status"
