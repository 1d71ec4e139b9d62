#pragma once
// `xpuperf data tokenize`: text files, folders of them, or JSON lines in (each may be gzip
// compressed, as Debian's documentation is); a token dataset
// (token_file.h) out. Inputs stream in chunks cut where tokenisation cannot change, so a file
// larger than memory is fine; chunks are tokenised on every core and written in input order.
// GPT-2 and Llama 3: a document (a file, or a JSON line) is one sequence ending in <|endoftext|>
// (Llama 3: between <|begin_of_text|> and <|end_of_text|>; SentencePiece: its lines encoded one by
// one, as spm_encode does, then </s>). WordPiece:
// a document's paragraphs (blank-line separated) are its sequences, for BERT's spans.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace xpuperf::text {

struct TokenizeOptions {
  std::string tokenizer;   // gpt2 | llama3 | sentencepiece | wordpiece
  std::string vocab;       // encoder.json or tokenizer.json (gpt2), tokenizer.json or tokenizer.model
                           // (llama3), the .model (sentencepiece), vocab.txt (wordpiece)
  std::string merges;      // vocab.bpe (gpt2 with encoder.json)
  bool lower_case = true;  // wordpiece
  std::vector<std::string> inputs;
  std::vector<std::string> extensions{"txt", "rst", "md", "text", "jsonl", "json"};  // in folders
  std::string json_key = "text";
  std::string prefix;
  int threads = 0;  // 0: every core
  // gpt2: <|endoftext|> after each document; llama3: <|begin_of_text|> before, <|end_of_text|> after
  bool end_of_document = true;
  // Synthetic: this many random tokens (no inputs, no vocabulary files) over vocab_size ids.
  std::int64_t synthetic_tokens = 0;
  std::int64_t vocab_size = 50257;
  std::uint64_t seed = 1;
};

struct TokenizeResult {
  std::int64_t files = 0, documents = 0, tokens = 0, bytes = 0;
  std::int64_t vocab_size = 0;
  std::int64_t unknown_tokens = 0;  // wordpiece: [UNK] ids written
  double seconds = 0;
};

// progress(done bytes, total bytes). Writes PREFIX.bin, PREFIX.idx and PREFIX.json (what made it:
// tokenizer, vocabulary files, inputs, counts, `synthetic`).
TokenizeResult tokenize_corpus(const TokenizeOptions& options,
                               const std::function<void(std::int64_t, std::int64_t)>& progress);

}  // namespace xpuperf::text
