// Makes gpt2_tokens.json, the expected ids of gpt2_texts.json, with the reference encoder of the
// npm package gpt-3-encoder (1.1.4):
//   npm install --prefix /tmp/gpt3 gpt-3-encoder@1.1.4
//   NODE_PATH=/tmp/gpt3/node_modules node tests/golden/tokenizers/make_gpt2_golden.js
const fs = require('fs');
const path = require('path');
const { encode } = require('gpt-3-encoder');
const texts = JSON.parse(fs.readFileSync(path.join(__dirname, 'gpt2_texts.json'), 'utf-8'));
const out = texts.map(t => encode(t));
fs.writeFileSync(path.join(__dirname, 'gpt2_tokens.json'), JSON.stringify(out) + '\n');
console.log(`${out.length} texts, ${out.reduce((n, ids) => n + ids.length, 0)} tokens`);
