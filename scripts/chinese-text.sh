#!/usr/bin/env bash
# Real Chinese text and a SentencePiece vocabulary trained on it, from what Debian packages ship
# (no download): the Simplified Chinese manual pages (manpages-zh) and the Debian Reference
# (debian-reference-zh-cn). For the sentencepiece tokeniser (`xpuperf data tokenize --tokenizer
# sentencepiece`) and the CPM case.
#   OUT_DIR/corpus.txt    the text, a line of a page a line (troff requests, HTML tags dropped)
#   OUT_DIR/documents.jsonl  the same text as documents, a JSON line {"text": ...} a manual page or
#                         a chapter of the Reference, in a fixed shuffled order (so that the last
#                         ones, which a case holds out for validation, are of both sources)
#   OUT_DIR/zh.model      a SentencePiece BPE model trained on it by Debian's spm_train (vocabulary
#   OUT_DIR/zh.vocab      VOCAB_SIZE, default 8000, which trains in about 20 s on 2 cores; CPM-1's
#                         own has 30,000, which this text also holds: 90 s)
# Usage: scripts/chinese-text.sh OUT_DIR [VOCAB_SIZE]
# Needs: apt-get install manpages-zh debian-reference-zh-cn sentencepiece
set -euo pipefail
out=${1:?usage: scripts/chinese-text.sh OUT_DIR [VOCAB_SIZE]}
vocab_size=${2:-8000}
man=/usr/share/man/zh_CN
reference=/usr/share/debian-reference
for need in "$man" "$reference/ch01.zh-cn.html"; do
  [[ -e $need ]] || { echo "chinese-text: no $need (apt-get install manpages-zh debian-reference-zh-cn)" >&2; exit 1; }
done
command -v spm_train >/dev/null || { echo "chinese-text: no spm_train (apt-get install sentencepiece)" >&2; exit 1; }
mkdir -p "$out"
python3 - "$man" "$reference" "$out/corpus.txt.partial" "$out/documents.jsonl.partial" <<'PY'
import glob, gzip, html, json, os, random, re, sys
man, reference, target, documents = sys.argv[1:5]
lines = []
pages = []
for path in sorted(glob.glob(os.path.join(man, "man*", "*.gz"))):
    start = len(lines)
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith((".", "'")):  # troff requests and comments
                continue
            line = re.sub(r"\\f[BIRP]|\\f\(..|\\[-&e]|\\\(..|\\[,/]", lambda m: "-" if m.group(0) == "\\-" else "", line)
            line = line.strip()
            if line:
                lines.append(line)
    pages.append(lines[start:])
for path in sorted(glob.glob(os.path.join(reference, "*.zh-cn.html"))):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", f.read(), flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    pages.append([l.strip() for l in text.splitlines() if l.strip()])
    lines += pages[-1]
with open(target, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
pages = [p for p in pages if p]
random.Random(1).shuffle(pages)
with open(documents, "w", encoding="utf-8") as f:
    for page in pages:
        f.write(json.dumps({"text": "\n".join(page)}, ensure_ascii=False) + "\n")
PY
mv "$out/corpus.txt.partial" "$out/corpus.txt"
mv "$out/documents.jsonl.partial" "$out/documents.jsonl"
if [[ ! -f $out/zh.model || $out/corpus.txt -nt $out/zh.model ]]; then
  spm_train --input="$out/corpus.txt" --model_prefix="$out/zh" --vocab_size="$vocab_size" --model_type=bpe \
    --character_coverage=0.9995 --num_threads=1 --minloglevel=2 >/dev/null 2>&1 ||
    { echo "chinese-text: spm_train failed on $out/corpus.txt" >&2; exit 1; }
fi
echo "chinese-text: $(wc -l <"$out/corpus.txt") lines ($(du -h "$out/corpus.txt" | cut -f1)) in $(wc -l <"$out/documents.jsonl") documents, SentencePiece model $out/zh.model"
