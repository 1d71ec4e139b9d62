#!/usr/bin/env bash
# The language cases' data from Debian's linux-doc-6.1 (the Linux kernel's documentation: its
# reStructuredText and text files, gzip-compressed): three token datasets and a labelled one in OUT_DIR,
#   linux-doc-gpt2.{bin,idx,json}   GPT-2's byte-level BPE, one sequence a file (the gpt2 case)
#   linux-doc-llama3.{bin,idx,json} Llama 3's byte-level BPE, one sequence a file (the llama case)
#   linux-doc-bert.{bin,idx,json}   bert-base-uncased's WordPiece, one sequence a paragraph (the bert case)
#   linux-doc-topics/               paragraphs labelled by their top-level folder, train.jsonl and
#                                   valid.jsonl, with bert-base-uncased's vocab.txt and Llama 3's
#                                   tokenizer.model (the bert_finetune and llama_finetune cases)
# Usage: scripts/linux-doc-datasets.sh OUT_DIR [DOC_DIR [XPUPERF]]
#   DOC_DIR  default /usr/share/doc/linux-doc-6.1/Documentation (apt-get install linux-doc-6.1)
#   XPUPERF  the binary, default build/src/xpuperf
set -euo pipefail
if (($# < 1)); then
  echo "usage: scripts/linux-doc-datasets.sh OUT_DIR [DOC_DIR [XPUPERF]]" >&2
  exit 2
fi
out=$1
docs=${2:-/usr/share/doc/linux-doc-6.1/Documentation}
root=$(cd "$(dirname "$0")/.." && pwd)
xpuperf=${3:-$root/build/src/xpuperf}
if [[ ! -d $docs ]]; then
  echo "linux-doc-datasets: no $docs (apt-get install linux-doc-6.1, or give the Documentation folder)" >&2
  exit 1
fi
"$root/scripts/text-vocabularies.sh"
vocab=$root/.cache/vocab
"$xpuperf" data tokenize --tokenizer gpt2 --vocab "$vocab/gpt2/encoder.json" --merges "$vocab/gpt2/vocab.bpe" \
  --extensions rst,txt "$docs" -o "$out/linux-doc-gpt2"
"$xpuperf" data tokenize --tokenizer llama3 --vocab "$vocab/llama3/tokenizer.model" \
  --extensions rst,txt "$docs" -o "$out/linux-doc-llama3"
"$xpuperf" data tokenize --tokenizer wordpiece --vocab "$vocab/bert-base-uncased/vocab.txt" \
  --extensions rst,txt "$docs" -o "$out/linux-doc-bert"
python3 "$root/scripts/linux-doc-topics.py" "$docs" "$out/linux-doc-topics"
cp "$vocab/bert-base-uncased/vocab.txt" "$out/linux-doc-topics/vocab.txt"
cp "$vocab/llama3/tokenizer.model" "$out/linux-doc-topics/tokenizer.model"
