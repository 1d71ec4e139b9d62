// ByteBpe's vocabularies, read from the files users have: GPT-2's encoder.json and vocab.bpe,
// Hugging Face's tokenizer.json, tiktoken's model file (Llama 3), and the byte spelling they use.
// The encoder itself (the index, the caches, the merges) is byte_bpe.cpp.

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "xpuperf/core/log.h"
#include "xpuperf/text/byte_bpe.h"
#include "xpuperf/text/tokenizer_error.h"
#include "xpuperf/text/unicode.h"

namespace xpuperf::text {

namespace {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TokenizerError(path + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// GPT-2's bytes_to_unicode, which byte-level vocabularies are spelt in: printable Latin-1 bytes
// stand for themselves, the others for U+0100 + n ("Ġ" for a space).
struct ByteSpelling {
  std::unordered_map<char32_t, std::uint8_t> byte_of;
  ByteSpelling() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_of[printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++)] = static_cast<std::uint8_t>(b);
    }
  }
  // A token as spelt in encoder.json / tokenizer.json → its bytes; nullopt when it is not so spelt.
  std::optional<std::string> bytes(const std::string& spelt) const {
    if (!is_valid_utf8(spelt)) return std::nullopt;
    std::string out;
    std::size_t len = 0;
    for (std::size_t i = 0; i < spelt.size(); i += len) {
      const auto b = byte_of.find(code_point_at(spelt, i, len));
      if (b == byte_of.end()) return std::nullopt;
      out.push_back(static_cast<char>(b->second));
    }
    return out;
  }
};

const ByteSpelling& spelling() {
  static const ByteSpelling s;
  return s;
}

}  // namespace

bool ByteBpe::Vocab::add_merge(const std::string& left_spelt, const std::string& right_spelt, std::int32_t rank) {
  const auto left = spelling().bytes(left_spelt), right = spelling().bytes(right_spelt);
  if (!left || !right) return false;
  const std::int32_t l = find(*left), r = find(*right), result = find(*left + *right);
  if (l < 0 || r < 0 || result < 0) return false;
  merges.emplace(pair(l, r), Merge{rank, result});
  return true;
}

namespace {

// Base64 (RFC 4648, with padding) → bytes; nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view s) {
  static const auto table = [] {
    std::array<int, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = i;
    return t;
  }();
  if (s.empty() || s.size() % 4 != 0) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < s.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s[i + k];
      if (c == '=' && i + 4 == s.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else if (pad > 0 || (v[k] = table[static_cast<unsigned char>(c)]) < 0) {
        return std::nullopt;
      }
    }
    const std::uint32_t n = (static_cast<std::uint32_t>(v[0]) << 18) | (static_cast<std::uint32_t>(v[1]) << 12) |
                            (static_cast<std::uint32_t>(v[2]) << 6) | static_cast<std::uint32_t>(v[3]);
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xFF));
  }
  return out;
}

// Llama 3.1's special tokens, ids 128,000 to 128,255 (Meta's tokenizer.py; llama3-tokenizer-js).
std::vector<std::string> llama3_special_tokens() {
  std::vector<std::string> t{"<|begin_of_text|>",
                             "<|end_of_text|>",
                             "<|reserved_special_token_0|>",
                             "<|reserved_special_token_1|>",
                             "<|finetune_right_pad_id|>",
                             "<|reserved_special_token_2|>",
                             "<|start_header_id|>",
                             "<|end_header_id|>",
                             "<|eom_id|>",
                             "<|eot_id|>",
                             "<|python_tag|>"};
  for (int i = 3; i <= 247; ++i) t.push_back("<|reserved_special_token_" + std::to_string(i) + "|>");
  return t;
}

constexpr std::int32_t kLlama3Tokens = 128000;

// Which expression cuts the text: a Split pre-tokenizer's pattern, or ByteLevel's own (GPT-2's);
// TokenizerError naming the file `f` for any other.
PreTokenizer hugging_face_pre_tokenizer(const nlohmann::json& j, const std::string& f) {
  std::optional<PreTokenizer> pre;
  std::string pattern;
  const nlohmann::json pre_json = j.value("pre_tokenizer", nlohmann::json());
  std::vector<nlohmann::json> steps;
  if (pre_json.is_object() && pre_json.value("type", "") == "Sequence" && pre_json.contains("pretokenizers") &&
      pre_json["pretokenizers"].is_array())
    steps.assign(pre_json["pretokenizers"].begin(), pre_json["pretokenizers"].end());
  else if (pre_json.is_object())
    steps.push_back(pre_json);
  for (const auto& step : steps) {
    if (!step.is_object()) continue;
    const std::string step_type = step.value("type", "");
    if (step_type == "Split" && step.contains("pattern") && step["pattern"].is_object()) {
      const auto& p = step["pattern"];
      pattern = p.contains("Regex") && p["Regex"].is_string() ? p["Regex"].get<std::string>()
                                                              : p.value("String", std::string("?"));
      for (auto kind : {PreTokenizer::gpt2, PreTokenizer::llama3})
        if (pattern == pre_tokenizer_pattern(kind)) pre = kind;
      if (!pre) break;
    } else if (step_type == "ByteLevel" && !pre && step.value("use_regex", true)) {
      pre = PreTokenizer::gpt2;
    }
  }
  if (!pre)
    throw TokenizerError(f + ": its pre-tokenizer" + (pattern.empty() ? "" : " ('" + pattern.substr(0, 80) + "')") +
                         " is neither GPT-2's nor Llama 3's expression, the two xpuperf has built in");
  return *pre;
}

// One of model.merges: "Ġ t" (tokenizers before 0.20) or ["Ġ", "t"].
std::pair<std::string, std::string> hugging_face_merge(const nlohmann::json& m, std::int32_t rank,
                                                       const std::string& f) {
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const auto space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
      throw TokenizerError(f + ": merge " + std::to_string(rank) + " ('" + s + "') is not two tokens");
    return {s.substr(0, space), s.substr(space + 1)};
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  throw TokenizerError(f + ": merge " + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
}

}  // namespace

ByteBpe ByteBpe::load_gpt2(const std::string& encoder_json, const std::string& vocab_bpe) {
  auto v = std::make_shared<Vocab>();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(encoder_json));
  } catch (const nlohmann::json::exception& e) {
    throw TokenizerError(encoder_json + ": not GPT-2's encoder.json (not JSON: " + e.what() + ")");
  }
  if (!j.is_object() || j.empty())
    throw TokenizerError(encoder_json + ": not GPT-2's encoder.json (a JSON object of token to id is expected)");
  if (j.contains("model") && j["model"].is_object())  // (GPT-2 has a token "model", an id)
    throw TokenizerError(encoder_json +
                         ": a Hugging Face tokenizer.json, not GPT-2's encoder.json: give it as --vocab "
                         "alone, without --merges");
  std::vector<std::string> spelt(j.size());
  for (const auto& [token, id] : j.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= static_cast<std::int64_t>(j.size()))
      throw TokenizerError(encoder_json + ": token " + token + " has no id between 0 and " +
                           std::to_string(j.size() - 1));
    const auto bytes = spelling().bytes(token);
    if (!bytes)
      throw TokenizerError(encoder_json + ": token '" + token +
                           "' is not spelt in bytes_to_unicode's characters: not a byte-level BPE vocabulary");
    v->set(id.get<std::int32_t>(), *bytes);
    spelt[static_cast<std::size_t>(id.get<std::int32_t>())] = token;
  }
  if (v->id_of_bytes("<|endoftext|>") < 0)
    throw TokenizerError(encoder_json + ": no <|endoftext|> token: not GPT-2's encoder.json");

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
    if (!v->add_merge(line.substr(0, space), line.substr(space + 1), rank)) ++unknown;
    ++rank;
  }
  if (rank == 0) throw TokenizerError(vocab_bpe + ": no merges");
  // A byte-level BPE's vocabulary is its 256 bytes, one token a merge and <|endoftext|>: fewer
  // merges than that means the merges file was cut short, and the tokens past it are never made.
  const auto needed = static_cast<std::int64_t>(v->bytes_of.size()) - 257;
  if (rank < needed)
    log::warning(vocab_bpe + ": " + std::to_string(rank) + " merges where " + encoder_json + "'s " +
                 std::to_string(v->bytes_of.size()) + " tokens need " + std::to_string(needed) +
                 ": the tokens past the last merge are never made and texts tokenise longer. Is the file cut short? "
                 "GPT-2's has 50,000 (scripts/text-vocabularies.sh fetches it, checked by its SHA-256)");
  if (unknown > rank / 100)
    throw TokenizerError(vocab_bpe + ": " + std::to_string(unknown) + " of its " + std::to_string(rank) +
                         " merges make tokens " + encoder_json +
                         " does not have: the two files do not belong together");
  v->finish(encoder_json);
  return ByteBpe(std::move(v));
}

ByteBpe ByteBpe::load_hugging_face(const std::string& tokenizer_json) {
  const std::string& f = tokenizer_json;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(f));
  } catch (const nlohmann::json::exception& e) {
    throw TokenizerError(f + ": not a Hugging Face tokenizer.json (not JSON: " + e.what() + ")");
  }
  const auto* model = j.is_object() && j.contains("model") && j["model"].is_object() ? &j["model"] : nullptr;
  if (!model) throw TokenizerError(f + ": not a Hugging Face tokenizer.json (no \"model\" object)");
  const std::string type = model->value("type", "");
  if (type != "BPE")
    throw TokenizerError(f + ": model.type is '" + type +
                         "', not BPE: a byte-level BPE's tokenizer.json is needed (GPT-2's or Llama 3's)");
  if (!model->contains("vocab") || !(*model)["vocab"].is_object() || (*model)["vocab"].empty())
    throw TokenizerError(f + ": model.vocab is not an object of token to id");
  if (!model->contains("merges") || !(*model)["merges"].is_array())
    throw TokenizerError(f + ": model.merges is not a list of merges");

  const PreTokenizer pre = hugging_face_pre_tokenizer(j, f);

  auto v = std::make_shared<Vocab>();
  v->pre = pre;
  v->ignore_merges = model->value("ignore_merges", false);
  for (const auto& [token, id] : (*model)["vocab"].items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() > std::numeric_limits<std::int32_t>::max())
      throw TokenizerError(f + ": model.vocab's token '" + token + "' has no id (a number from 0)");
    const auto bytes = spelling().bytes(token);
    if (!bytes)
      throw TokenizerError(f + ": model.vocab's token '" + token +
                           "' is not spelt in bytes_to_unicode's characters: not a byte-level BPE");
    v->set(id.get<std::int32_t>(), *bytes);
  }
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const auto& t : j["added_tokens"]) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || t["id"].get<std::int64_t>() < 0 ||
          !t.contains("content") || !t["content"].is_string())
        throw TokenizerError(f + ": added_tokens has an entry without an id and a content: " + t.dump().substr(0, 80));
      v->add_special(t["id"].get<std::int32_t>(), t["content"].get<std::string>());
    }
  v->finish(f);

  std::int32_t rank = 0;
  std::int64_t unknown = 0;
  for (const auto& m : (*model)["merges"]) {
    const auto [left, right] = hugging_face_merge(m, rank, f);
    if (!v->add_merge(left, right, rank)) ++unknown;
    ++rank;
  }
  if (rank == 0) throw TokenizerError(f + ": model.merges is empty");
  if (unknown > rank / 100)
    throw TokenizerError(f + ": " + std::to_string(unknown) + " of its " + std::to_string(rank) +
                         " merges make tokens its vocabulary does not have");
  const auto needed = static_cast<std::int64_t>(v->ids.size()) - 256 - (v->id_of_bytes("<|endoftext|>") >= 0 ? 1 : 0);
  if (rank < needed)
    log::warning(f + ": " + std::to_string(rank) + " merges where its " + std::to_string(v->ids.size()) +
                 " tokens need " + std::to_string(needed) +
                 ": the tokens past the last merge are never made. Is the file cut short?");
  return ByteBpe(std::move(v));
}

ByteBpe ByteBpe::load_tiktoken(const std::string& tokenizer_model) {
  const std::string& f = tokenizer_model;
  const std::string text = read_text_file(f);
  auto v = std::make_shared<Vocab>();
  v->pre = PreTokenizer::llama3;
  v->ignore_merges = true;  // tiktoken looks a whole piece up before it merges
  std::int32_t line_number = 0;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t newline = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, newline - start);
    start = newline + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto space = line.find(' ');
    std::optional<std::string> bytes;
    std::int64_t rank = -1;
    if (space != std::string_view::npos) {
      bytes = base64_decode(line.substr(0, space));
      const std::string_view digits = line.substr(space + 1);
      const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
      if (error != std::errc() || end != digits.data() + digits.size()) rank = -1;
    }
    if (!bytes || rank < 0)
      throw TokenizerError(f + ": line " + std::to_string(line_number) +
                           " is not a token in base64 and its rank: not Meta's Llama 3 tokenizer.model (tiktoken's "
                           "format; Llama 2's SentencePiece tokenizer.model is another tokeniser)");
    if (rank != static_cast<std::int64_t>(v->bytes_of.size()))
      throw TokenizerError(f + ": line " + std::to_string(line_number) + " has rank " + std::to_string(rank) +
                           " where " + std::to_string(v->bytes_of.size()) + " is next: the ranks must count up from 0");
    if (!v->set(static_cast<std::int32_t>(rank), std::move(*bytes)))
      throw TokenizerError(f + ": line " + std::to_string(line_number) + " repeats an earlier token");
  }
  const auto tokens = static_cast<std::int32_t>(v->bytes_of.size());
  if (tokens != kLlama3Tokens)
    log::warning(f + ": " + std::to_string(tokens) +
                 " tokens where Llama 3's tokenizer.model has 128,000: "
                 "Llama 3's expression and special tokens are assumed");
  const auto specials = llama3_special_tokens();
  for (std::size_t i = 0; i < specials.size(); ++i) v->add_special(tokens + static_cast<std::int32_t>(i), specials[i]);
  v->finish(f);
  // tiktoken merges the adjacent pair whose concatenation has the lowest rank.
  v->merge_by_concatenation = true;
  return ByteBpe(std::move(v));
}

ByteBpe ByteBpe::load_single_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TokenizerError(path + ": cannot be read");
  char c = 0;
  while (in.get(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
  }
  return c == '{' ? load_hugging_face(path) : load_tiktoken(path);
}

}  // namespace xpuperf::text
