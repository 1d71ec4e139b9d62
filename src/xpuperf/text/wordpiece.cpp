#include "xpuperf/text/wordpiece.h"

#include <fstream>

#include "xpuperf/core/log.h"
#include "xpuperf/text/tokenizer_error.h"
#include "xpuperf/text/unicode.h"

namespace xpuperf::text {

namespace {

constexpr std::size_t kMaxWordChars = 100;

// BERT's _is_whitespace, _is_control and _is_punctuation. The line and paragraph separators
// (U+2028, U+2029) are not whitespace to _is_whitespace, but Python's str.split(), which BERT's
// tokeniser splits words with, splits at them: separators here too (checked against Hugging
// Face's BertTokenizer, bench/wordpiece_vs_hf.py).
bool bert_whitespace(char32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x2028 || c == 0x2029 ||
         (c >= 0x80 && is_js_whitespace(c) && c != 0xFEFF);
}

bool bert_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  return is_control(c);
}

bool bert_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  return c >= 0x80 && is_punctuation(c);
}

}  // namespace

WordPiece WordPiece::load(const std::string& vocab_txt, bool lower_case) {
  std::ifstream in(vocab_txt, std::ios::binary);
  if (!in) throw TokenizerError(vocab_txt + ": cannot be read");
  WordPiece w;
  w.lower_case_ = lower_case;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (w.tokens_.empty() && (line.rfind("#version", 0) == 0 || line.rfind("{", 0) == 0))
      throw TokenizerError(vocab_txt + ": this is a GPT-2 " + (line[0] == '{' ? "encoder.json" : "vocab.bpe") +
                           ", not a WordPiece vocab.txt (one token a line); use --tokenizer gpt2");
    w.ids_.emplace(line, static_cast<std::int32_t>(w.tokens_.size()));
    w.tokens_.push_back(line);
  }
  auto special = [&](const char* name) {
    const auto it = w.ids_.find(name);
    if (it == w.ids_.end())
      throw TokenizerError(vocab_txt + ": no " + std::string(name) +
                           " token: not a BERT WordPiece vocab.txt (it needs [PAD], [UNK], [CLS], [SEP] and [MASK])");
    return it->second;
  };
  w.unk_ = special("[UNK]");
  w.cls_ = special("[CLS]");
  w.sep_ = special("[SEP]");
  w.mask_ = special("[MASK]");
  w.pad_ = special("[PAD]");
  // A vocabulary cut short still has its special tokens (they come first) but not the letters
  // every word is spelt from, and every word would become [UNK].
  std::string missing;
  for (char c = 'a'; c <= 'z'; ++c) {
    const std::string letter(1, lower_case ? c : static_cast<char>(c - 'a' + 'A'));
    if (!w.ids_.count(letter) && !w.ids_.count(std::string(1, c)))
      missing += letter;
    else if (!w.ids_.count("##" + letter) && !w.ids_.count("##" + std::string(1, c)))
      missing += "##" + letter + " ";
  }
  if (!missing.empty())
    log::warning(vocab_txt + ": " + std::to_string(w.tokens_.size()) + " tokens and no piece for some letters (" +
                 missing.substr(0, 60) +
                 "): words with them become [UNK]. Is the file cut short? bert-base-uncased's vocab.txt has 30,522 "
                 "tokens (scripts/text-vocabularies.sh fetches it, checked by its SHA-256)");
  return w;
}

std::vector<std::string> WordPiece::basic_tokens(std::string_view text) const {
  // Clean: drop NUL, U+FFFD and control characters; any whitespace becomes a space; CJK
  // ideographs become words of their own.
  std::vector<char32_t> cleaned;
  for (char32_t c : utf8_to_code_points(text)) {
    if (c == 0 || c == 0xFFFD || bert_control(c)) continue;
    if (is_cjk_ideograph(c)) {
      cleaned.push_back(' ');
      cleaned.push_back(c);
      cleaned.push_back(' ');
    } else {
      cleaned.push_back(bert_whitespace(c) ? U' ' : c);
    }
  }
  std::vector<std::string> out;
  std::vector<char32_t> word;
  auto finish_word = [&] {
    if (word.empty()) return;
    if (lower_case_) {
      for (char32_t& c : word) c = to_lower(c);
      std::vector<char32_t> stripped;
      for (char32_t c : nfd(word))
        if (!is_nonspacing_mark(c)) stripped.push_back(c);
      word = std::move(stripped);
    }
    // Punctuation splits a word and is a token of its own.
    std::string current;
    for (char32_t c : word) {
      if (bert_punctuation(c)) {
        if (!current.empty()) out.push_back(std::move(current));
        current.clear();
        std::string p;
        append_utf8(p, c);
        out.push_back(std::move(p));
      } else {
        append_utf8(current, c);
      }
    }
    if (!current.empty()) out.push_back(std::move(current));
    word.clear();
  };
  for (char32_t c : cleaned) {
    if (c == ' ')
      finish_word();
    else
      word.push_back(c);
  }
  finish_word();
  return out;
}

void WordPiece::pieces(const std::string& word, std::vector<std::int32_t>& out) const {
  const auto chars = utf8_to_code_points(word);
  if (chars.size() > kMaxWordChars) {
    out.push_back(unk_);
    return;
  }
  // Byte offsets of each character, so that candidate pieces are substrings of `word`.
  std::vector<std::size_t> at(chars.size() + 1, 0);
  for (std::size_t i = 0; i < chars.size(); ++i) {
    std::string one;
    append_utf8(one, chars[i]);
    at[i + 1] = at[i] + one.size();
  }
  std::vector<std::int32_t> found;
  std::size_t start = 0;
  std::string candidate;
  while (start < chars.size()) {
    std::size_t end = chars.size();
    std::int32_t id = -1;
    for (; end > start; --end) {
      candidate.assign(start > 0 ? "##" : "").append(word, at[start], at[end] - at[start]);
      const auto it = ids_.find(candidate);
      if (it != ids_.end()) {
        id = it->second;
        break;
      }
    }
    if (id < 0) {
      out.push_back(unk_);
      return;
    }
    found.push_back(id);
    start = end;
  }
  out.insert(out.end(), found.begin(), found.end());
}

std::vector<std::int32_t> WordPiece::encode(std::string_view text) const {
  std::vector<std::int32_t> out;
  for (const auto& word : basic_tokens(text)) pieces(word, out);
  return out;
}

std::vector<std::string> WordPiece::tokenize(std::string_view text) const {
  std::vector<std::string> out;
  for (const auto id : encode(text)) out.push_back(tokens_[static_cast<std::size_t>(id)]);
  return out;
}

}  // namespace xpuperf::text
