// Makes llama3_tokens.json, the expected Llama 3 ids of gpt2_texts.json followed by
// llama3_texts.json, with the reference encoder of the npm package llama3-tokenizer-js (1.2.0):
//   npm install --prefix /tmp/llama3 llama3-tokenizer-js@1.2.0
//   node tests/golden/tokenizers/make_llama3_golden.js /tmp/llama3/node_modules/llama3-tokenizer-js
// No <|begin_of_text|> or <|end_of_text|> is added, and special tokens' names in the text are
// text (a regular expression that never matches stands in for its special-token one), as
// xpuperf encodes documents.
const fs = require('fs');
const path = require('path');
const pkg = process.argv[2] || path.join(__dirname, '../../../.cache/npm/node_modules/llama3-tokenizer-js');
const { llama3Tokenizer } = require(path.resolve(pkg, 'bundle/commonjs-llama3-tokenizer-with-baked-data.cjs'));
const read = name => JSON.parse(fs.readFileSync(path.join(__dirname, name), 'utf-8'));
const texts = [...read('gpt2_texts.json'), ...read('llama3_texts.json')];
const options = { bos: false, eos: false, specialTokenRegex: /(?!)/g };
const out = texts.map(t => llama3Tokenizer.encode(t, options));
fs.writeFileSync(path.join(__dirname, 'llama3_tokens.json'), JSON.stringify(out) + '\n');
console.log(`${out.length} texts, ${out.reduce((n, ids) => n + ids.length, 0)} tokens`);
