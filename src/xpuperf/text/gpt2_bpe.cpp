#include "xpuperf/text/gpt2_bpe.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "xpuperf/core/log.h"
#include "xpuperf/text/tokenizer_error.h"
#include "xpuperf/text/unicode.h"

namespace xpuperf::text {

struct Gpt2Bpe::Vocab {
  std::unordered_map<std::string, std::int32_t> ids;
  std::vector<std::string> tokens;                      // by id
  std::unordered_map<std::string, std::int32_t> ranks;  // "first second" → merge priority
  std::string byte_symbol[256];                         // a byte's character, UTF-8
  std::unordered_map<std::string, std::uint8_t> symbol_byte;
};

namespace {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TokenizerError(path + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One code point of UTF-8 at s[i] (valid UTF-8: encode() made sure).
char32_t code_point_at(std::string_view s, std::size_t i, std::size_t& length) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) {
    length = 1;
    return b;
  }
  length = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : 4;
  char32_t c = b & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < length; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return c;
}

enum class Kind { letter, number, space, other };

Kind kind_of(char32_t c) {
  if (is_letter(c)) return Kind::letter;
  if (is_number(c)) return Kind::number;
  if (is_js_whitespace(c)) return Kind::space;
  return Kind::other;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    std::size_t len = 0;
    const char32_t c = code_point_at(s, i, len);
    if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
        (c >= 0xD800 && c <= 0xDFFF))
      return false;
    i += n;
  }
  return true;
}

}  // namespace

Gpt2Bpe::Gpt2Bpe(std::shared_ptr<const Vocab> vocab) : vocab_(std::move(vocab)) {
  end_of_text_ = vocab_->ids.at("<|endoftext|>");
}

std::int32_t Gpt2Bpe::vocab_size() const {
  return static_cast<std::int32_t>(vocab_->tokens.size());
}

Gpt2Bpe Gpt2Bpe::load(const std::string& encoder_json, const std::string& vocab_bpe) {
  auto v = std::make_shared<Vocab>();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(encoder_json));
  } catch (const nlohmann::json::exception& e) {
    throw TokenizerError(encoder_json + ": not GPT-2's encoder.json (not JSON: " + e.what() + ")");
  }
  if (!j.is_object() || j.empty())
    throw TokenizerError(encoder_json + ": not GPT-2's encoder.json (a JSON object of token to id is expected)");
  v->tokens.resize(j.size());
  for (const auto& [token, id] : j.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= static_cast<std::int64_t>(j.size()))
      throw TokenizerError(encoder_json + ": token " + token + " has no id between 0 and " +
                           std::to_string(j.size() - 1));
    v->ids[token] = id.get<std::int32_t>();
    v->tokens[static_cast<std::size_t>(id.get<std::int32_t>())] = token;
  }
  if (!v->ids.count("<|endoftext|>"))
    throw TokenizerError(encoder_json + ": no <|endoftext|> token: not GPT-2's encoder.json");

  // bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others for 256 + n.
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    std::string symbol;
    append_utf8(symbol, printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++));
    v->byte_symbol[b] = symbol;
    v->symbol_byte[symbol] = static_cast<std::uint8_t>(b);
  }

  std::istringstream merges(read_text_file(vocab_bpe));
  std::string line;
  std::int32_t rank = 0, line_number = 0, unknown = 0;
  while (std::getline(merges, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
    const auto space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 >= line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw TokenizerError(vocab_bpe + ": line " + std::to_string(line_number) + " is not a merge of two symbols (\"" +
                           line.substr(0, 40) +
                           "\"): not GPT-2's vocab.bpe (a WordPiece vocab.txt has one token a line)");
    if (!v->ids.count(line.substr(0, space) + line.substr(space + 1))) ++unknown;
    v->ranks.emplace(line, rank++);
  }
  if (rank == 0) throw TokenizerError(vocab_bpe + ": no merges");
  // A byte-level BPE's vocabulary is its 256 bytes, one token a merge and <|endoftext|>: fewer
  // merges than that means the merges file was cut short, and the tokens past it are never made.
  const auto needed = static_cast<std::int64_t>(v->tokens.size()) - 257;
  if (rank < needed)
    log::warning(vocab_bpe + ": " + std::to_string(rank) + " merges where " + encoder_json + "'s " +
                 std::to_string(v->tokens.size()) + " tokens need " + std::to_string(needed) +
                 ": the tokens past the last merge are never made and texts tokenise longer. Is the file cut short? "
                 "GPT-2's has 50,000 (scripts/text-vocabularies.sh fetches it, checked by its SHA-256)");
  if (unknown > rank / 100)
    throw TokenizerError(vocab_bpe + ": " + std::to_string(unknown) + " of its " + std::to_string(rank) +
                         " merges make tokens " + encoder_json +
                         " does not have: the two files do not belong together");
  return Gpt2Bpe(std::move(v));
}

std::vector<std::string_view> Gpt2Bpe::pre_tokenize(std::string_view s) {
  // /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/u, alternative by
  // alternative, as the regular expression engine tries them.
  std::vector<std::string_view> out;
  const std::size_t n = s.size();
  std::size_t i = 0;
  auto run_of = [&](std::size_t from, Kind kind) {
    std::size_t j = from, len = 0;
    while (j < n && kind_of(code_point_at(s, j, len)) == kind) j += len;
    return j;
  };
  while (i < n) {
    if (s[i] == '\'' && i + 1 < n) {
      static const char* contractions[] = {"s", "t", "re", "ve", "m", "ll", "d"};
      std::size_t matched = 0;
      for (const char* c : contractions) {
        const std::string_view cv(c);
        if (s.substr(i + 1, cv.size()) == cv) {
          matched = 1 + cv.size();
          break;
        }
      }
      if (matched) {
        out.push_back(s.substr(i, matched));
        i += matched;
        continue;
      }
    }
    std::size_t len = 0;
    const std::size_t after_space = s[i] == ' ' ? i + 1 : i;
    if (after_space < n) {
      const Kind k = kind_of(code_point_at(s, after_space, len));
      if (k != Kind::space) {  // ' ?\p{L}+', ' ?\p{N}+' or ' ?[^\s\p{L}\p{N}]+'
        const std::size_t end = run_of(after_space, k);
        out.push_back(s.substr(i, end - i));
        i = end;
        continue;
      }
    }
    // Whitespace: all of it at the end of the text, else all but the last character when that
    // leaves the last one to lead the next word ('\s+(?!\S)'), else the run ('\s+').
    const std::size_t end = run_of(i, Kind::space);
    std::size_t stop = end;
    if (end < n) {
      std::size_t last = i, k = i;
      while (k < end) {
        last = k;
        code_point_at(s, k, len);
        k += len;
      }
      if (last > i) stop = last;
    }
    out.push_back(s.substr(i, stop - i));
    i = stop;
  }
  return out;
}

void Gpt2Bpe::bpe(const std::string& word, std::vector<std::int32_t>& out) {
  if (auto hit = cache_.find(word); hit != cache_.end()) {
    out.insert(out.end(), hit->second.begin(), hit->second.end());
    return;
  }
  std::vector<std::string> symbols;
  for (unsigned char b : word) symbols.push_back(vocab_->byte_symbol[b]);
  std::string key;
  while (symbols.size() > 1) {
    std::int32_t best = std::numeric_limits<std::int32_t>::max();
    std::size_t best_at = 0;
    for (std::size_t k = 0; k + 1 < symbols.size(); ++k) {
      key.assign(symbols[k]).append(" ").append(symbols[k + 1]);
      if (auto r = vocab_->ranks.find(key); r != vocab_->ranks.end() && r->second < best) {
        best = r->second;
        best_at = k;
      }
    }
    if (best == std::numeric_limits<std::int32_t>::max()) break;
    const std::string first = symbols[best_at], second = symbols[best_at + 1];
    std::vector<std::string> merged;
    merged.reserve(symbols.size());
    for (std::size_t k = 0; k < symbols.size();) {
      if (k + 1 < symbols.size() && symbols[k] == first && symbols[k + 1] == second) {
        merged.push_back(first + second);
        k += 2;
      } else {
        merged.push_back(std::move(symbols[k]));
        ++k;
      }
    }
    symbols = std::move(merged);
  }
  std::vector<std::int32_t> ids;
  ids.reserve(symbols.size());
  for (const auto& symbol : symbols) {
    const auto id = vocab_->ids.find(symbol);
    if (id == vocab_->ids.end()) throw TokenizerError("GPT-2 BPE: the vocabulary has no token for '" + symbol + "'");
    ids.push_back(id->second);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  if (cache_.size() > 1'000'000) cache_.clear();
  cache_.emplace(word, std::move(ids));
}

std::vector<std::int32_t> Gpt2Bpe::encode(std::string_view text) {
  // Malformed UTF-8 reads as U+FFFD, as a text decoder would hand it to the reference encoder.
  std::string repaired;
  if (!valid_utf8(text)) {
    repaired = to_utf8(utf8_to_code_points(text));
    text = repaired;
  }
  std::vector<std::int32_t> out;
  out.reserve(text.size() / 3);
  std::string word;
  for (const auto piece : pre_tokenize(text)) {
    word.assign(piece);
    bpe(word, out);
  }
  return out;
}

std::string Gpt2Bpe::decode(const std::vector<std::int32_t>& ids) const {
  std::string out;
  for (const auto id : ids) {
    if (id < 0 || id >= vocab_size())
      throw TokenizerError("GPT-2 BPE: token id " + std::to_string(id) + " is out of the vocabulary");
    const std::string& token = vocab_->tokens[static_cast<std::size_t>(id)];
    std::size_t len = 0;
    for (std::size_t i = 0; i < token.size(); i += len) {
      code_point_at(token, i, len);
      const auto b = vocab_->symbol_byte.find(token.substr(i, len));
      if (b != vocab_->symbol_byte.end()) out.push_back(static_cast<char>(b->second));
    }
  }
  return out;
}

}  // namespace xpuperf::text
