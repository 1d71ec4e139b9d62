#!/usr/bin/env bash
# Rules of the source tree that a compiler on this machine cannot see:
# - the vendor as a plug-in (docs/VENDORS.md): outside NVIDIA's plug-in folder and the LibTorch shim
#   (src/xpuperf/torchrt), no source calls a CUDA, NCCL, NVML or nvJPEG function, includes their
#   headers or names LibTorch's CUDA API (torch::kCUDA, c10::cuda, at::cuda);
# - LibTorch's versions differ in one place, the shim (src/xpuperf/torchrt/compat.h): no other file
#   of src/ tests TORCH_VERSION_MAJOR or _MINOR (a vendor's plug-in may, for the LibTorch it builds on);
# - no std::filesystem::remove_all: PyTorch 2.x's libtorch.so exports a copy of it that jumps to
#   address 0 (core/files.h's remove_tree instead). The GPU machine's `vendor check` crashed so at
#   its exit, after its table.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
status=0
# Code only: FILE:LINE:TEXT of the lines under DIRS whose text before any // comment matches the
# Perl regex PATTERN.
code_matches() {
  local pattern=$1
  shift
  find "$@" -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
    xargs -0 perl -ne 'my $code = $_; $code =~ s{//.*}{}; print "$ARGV:$.:$_" if $code =~ /'"$pattern"'/; close ARGV if eof'
}
cuda_api='\b(cuda|nccl|nvml|nvjpeg)[A-Z]\w*\s*\(|torch::kCUDA|c10::cuda::|at::cuda::|#include\s*<(cuda|nccl|nvml|nvjpeg)\w*\.h>'
found=$(code_matches "$cuda_api" src vendors | grep -vE '^(src/xpuperf/torchrt/|vendors/nvidia/plugin/)')
if [[ -n $found ]]; then
  echo "FAILED: CUDA, NCCL, NVML or nvJPEG named outside vendors/nvidia/plugin and src/xpuperf/torchrt" \
    "(a device service belongs behind the vendor interface: docs/VENDORS.md):" >&2
  echo "$found" >&2
  status=1
fi
found=$(code_matches '^\s*#\s*(el)?if.*TORCH_VERSION_(MAJOR|MINOR)' src | grep -v '^src/xpuperf/torchrt/compat.h:')
if [[ -n $found ]]; then
  echo "FAILED: a LibTorch version test outside the shim; give src/xpuperf/torchrt/compat.h a function for it:" >&2
  echo "$found" >&2
  status=1
fi
found=$(code_matches '\bremove_all\s*\(' src vendors)
if [[ -n $found ]]; then
  echo "FAILED: std::filesystem::remove_all, which PyTorch 2.x's libtorch.so breaks; use remove_tree (core/files.h):" >&2
  echo "$found" >&2
  status=1
fi
((status == 0)) && echo "ok"
exit "$status"
