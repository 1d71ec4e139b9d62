#include "xpuperf/text/byte_bpe.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "xpuperf/core/log.h"
#include "xpuperf/text/tokenizer_error.h"
#include "xpuperf/text/unicode.h"

namespace xpuperf::text {

// Not in an anonymous namespace: ByteBpe::RecentPieces (declared in the header) holds its slots.
namespace bpe_index {

// A vocabulary's bytes → id, looked up by string_view: open addressing over ids whose bytes live in
// the vocabulary's own list, so a lookup builds no string. Each slot also holds its key's first 8
// bytes and length, so a key of up to 8 bytes (most tokens) is found or ruled out without reading
// the list: one cache miss a lookup, not two. std::unordered_map<std::string>'s lookups were a third
// of the Llama 3 tokeniser's time.
class TokenIndex {
 public:
  struct Slot {
    std::uint64_t head = 0;  // the key's first 8 bytes, zero-padded
    std::uint32_t tag = 0;   // 24 bits of the hash, then the key's length (255 for any longer; 0: empty)
    std::int32_t id = -1;
  };
  struct Probe {
    std::uint64_t hash = 0, head = 0;
    std::uint32_t tag = 0;
    explicit Probe(std::string_view key) : hash(hash_of(key)), head(head_of(key)) {
      tag = static_cast<std::uint32_t>(hash >> 40) << 8 |
            static_cast<std::uint32_t>(std::min<std::size_t>(255, key.size()));
    }
    bool matches(const Slot& s, std::string_view key, const std::vector<std::string>& bytes_of) const {
      return s.tag == tag && s.head == head && (key.size() <= 8 || bytes_of[static_cast<std::size_t>(s.id)] == key);
    }
  };

  std::int32_t find(std::string_view key, const std::vector<std::string>& bytes_of) const {
    return find(Probe(key), key, bytes_of);
  }
  std::int32_t find(const Probe& p, std::string_view key, const std::vector<std::string>& bytes_of) const {
    if (slots_.empty()) return -1;
    for (std::size_t i = p.hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (p.matches(s, key, bytes_of)) return s.id;
    }
  }
  // Indexes `id` by bytes_of[id]; false (and nothing changes) where those bytes have an id already.
  bool insert(std::int32_t id, const std::vector<std::string>& bytes_of) {
    if ((size_ + 1) * 2 > slots_.size()) grow(bytes_of);
    const std::string_view key = bytes_of[static_cast<std::size_t>(id)];
    const Probe p(key);
    for (std::size_t i = p.hash & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{p.head, p.tag, id};
        ++size_;
        return true;
      }
      if (p.matches(s, key, bytes_of)) return false;
    }
  }
  std::size_t size() const { return size_; }
  // The hash that places a key (the slot, and the tag's high bits).
  static std::uint64_t hash_of(std::string_view s) {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    std::size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      h = (h ^ load8(s.data() + i)) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 32;
    }
    const std::uint64_t tail = load_short(s.data() + i, s.size() - i);
    // MurmurHash3's finaliser: every bit of the key reaches the low bits that pick the slot.
    h ^= tail;
    h = (h ^ (h >> 33)) * 0xFF51AFD7ED558CCDull;
    h = (h ^ (h >> 33)) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 33);
  }
  // A key's first 8 bytes, zero-padded.
  static std::uint64_t head_of(std::string_view key) {
    return key.size() >= 8 ? load8(key.data()) : load_short(key.data(), key.size());
  }

 private:
  static std::uint64_t load8(const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  // Bytes p[0, n), n < 8, zero-padded, in fixed-size loads: a memcpy of a variable length is a call,
  // and reading its result back stalls (that was a fifth of the tokeniser's time).
  static std::uint64_t load_short(const char* p, std::size_t n) {
    if (n >= 4) {
      std::uint32_t a, b;
      std::memcpy(&a, p, 4);
      std::memcpy(&b, p + n - 4, 4);
      return a | static_cast<std::uint64_t>(b) << (8 * (n - 4));
    }
    if (n == 0) return 0;
    const auto byte = [p](std::size_t k) { return static_cast<std::uint64_t>(static_cast<unsigned char>(p[k])); };
    return byte(0) | byte(n / 2) << (8 * (n / 2)) | byte(n - 1) << (8 * (n - 1));
  }
  void grow(const std::vector<std::string>& bytes_of) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(64, old.size() * 2), Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.id >= 0) insert(s.id, bytes_of);
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0, size_ = 0;
};

}  // namespace bpe_index

using bpe_index::TokenIndex;

struct ByteBpe::Vocab {
  PreTokenizer pre = PreTokenizer::gpt2;
  bool ignore_merges = false;         // a piece that is a token is that token, merges or not (Llama 3)
  std::vector<std::string> bytes_of;  // by id: a token's bytes, a special token's text
  TokenIndex ids;                     // a vocabulary entry's bytes → id
  std::unordered_map<std::string, std::int32_t> specials;  // an added token's text → id
  std::int32_t byte_id[256];
  using Merge = ByteBpe::Merge;
  std::unordered_map<std::uint64_t, Merge> merges;  // (left id, right id) → the merge
  // tiktoken's rule instead of a merges list: two tokens merge when their concatenation is a token,
  // ranked by its id (Meta's tokenizer.model has no merges; listing every pair it implies took most
  // of the vocabulary's loading time).
  bool merge_by_concatenation = false;
  std::int32_t begin = -1, end = -1;

  static std::uint64_t pair(std::int32_t left, std::int32_t right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
  }
  // The id of a vocabulary entry's bytes; -1 when none.
  std::int32_t id_of_bytes(std::string_view bytes) const { return ids.find(bytes, bytes_of); }
  // False where the bytes are another id's already (that one keeps them).
  bool set(std::int32_t id, std::string bytes) {
    if (static_cast<std::size_t>(id) >= bytes_of.size()) bytes_of.resize(static_cast<std::size_t>(id) + 1);
    bytes_of[static_cast<std::size_t>(id)] = std::move(bytes);
    return ids.insert(id, bytes_of);
  }
  void add_special(std::int32_t id, const std::string& text) {
    if (static_cast<std::size_t>(id) >= bytes_of.size()) bytes_of.resize(static_cast<std::size_t>(id) + 1);
    specials[text] = id;
    bytes_of[static_cast<std::size_t>(id)] = text;
  }
  // A merge of two tokens as a vocabulary file spells them; false when the vocabulary lacks
  // either token or what they make (the file's merges and tokens do not belong together).
  bool add_merge(const std::string& left_spelt, const std::string& right_spelt, std::int32_t rank);
  std::int32_t find(const std::string& token) const {
    if (auto s = specials.find(token); s != specials.end()) return s->second;
    return id_of_bytes(token);
  }
  // Every byte must be a token, or a piece could have no tokens.
  void finish(const std::string& file) {
    for (int b = 0; b < 256; ++b) {
      const char byte = static_cast<char>(b);
      const std::int32_t id = id_of_bytes(std::string_view(&byte, 1));
      if (id < 0) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", b);
        throw TokenizerError(file + ": byte " + hex + " has no token: not a byte-level BPE vocabulary");
      }
      byte_id[b] = id;
    }
    begin = find("<|begin_of_text|>");
    end = find("<|end_of_text|>");
    if (end < 0) end = find("<|endoftext|>");
  }
};

// A thread's pieces of up to 8 bytes as it last looked them up, direct-mapped by their bytes (one
// multiplication, no hash of the general index): the frequent ones stay in a few hundred KiB of the
// core's cache, where the vocabulary's index (4 MiB for Llama 3's) mostly misses.
struct ByteBpe::RecentPieces {
  static constexpr int kBits = 14;
  struct Slot {
    std::uint64_t head = 0;  // the piece's bytes, zero-padded
    std::uint32_t size = 0;  // 0: empty
    std::int32_t id = -1;
  };
  std::vector<Slot> slots = std::vector<Slot>(std::size_t{1} << kBits);

  std::int32_t id_of(std::string_view piece, const Vocab& v) {
    if (piece.size() > 8 || piece.empty()) return v.id_of_bytes(piece);
    const std::uint64_t head = TokenIndex::head_of(piece);
    const std::uint64_t size = piece.size();
    Slot& s = slots[((head ^ size << 59) * 0x9E3779B97F4A7C15ull) >> (64 - kBits)];
    if (s.head == head && s.size == size) return s.id;
    const std::int32_t id = v.id_of_bytes(piece);
    s = Slot{head, static_cast<std::uint32_t>(size), id};
    return id;
  }
};

// The tokens of each piece that BPE has merged, by the piece's bytes: open addressing over slots that
// point into two arenas (the pieces' bytes, their tokens), so a lookup allocates nothing and reads
// one slot, then the bytes. std::unordered_map<std::string, std::vector> allocated a key for every
// lookup and two nodes for every piece, and its lookups were an eighth of the Llama 3 tokeniser's time.
class ByteBpe::PieceCache {
 public:
  // The piece's tokens appended to `out`; false when the piece is not here.
  bool append(std::string_view piece, std::uint64_t hash, std::vector<std::int32_t>& out) const {
    for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.tokens_size == 0) return false;
      if (s.hash == hash && s.piece_size == piece.size() &&
          std::memcmp(bytes_.data() + s.piece_at, piece.data(), piece.size()) == 0) {
        out.insert(out.end(), tokens_.begin() + s.tokens_at, tokens_.begin() + s.tokens_at + s.tokens_size);
        return true;
      }
    }
  }
  void add(std::string_view piece, std::uint64_t hash, const std::vector<std::int32_t>& tokens) {
    // Bounded: a corpus of ever new pieces (hashes, identifiers) starts the cache again.
    if (size_ >= kMostPieces || bytes_.size() + piece.size() > kMostBytes) clear();
    if ((size_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = hash & mask_;
    while (slots_[i].tokens_size != 0) i = (i + 1) & mask_;
    slots_[i] = Slot{hash, static_cast<std::uint32_t>(bytes_.size()), static_cast<std::uint32_t>(piece.size()),
                     static_cast<std::uint32_t>(tokens_.size()), static_cast<std::uint32_t>(tokens.size())};
    bytes_.append(piece);
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    ++size_;
  }

 private:
  static constexpr std::size_t kMostPieces = 1'000'000, kMostBytes = std::size_t{1} << 30;
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t piece_at = 0, piece_size = 0, tokens_at = 0, tokens_size = 0;  // tokens_size 0: empty
  };
  void clear() {
    slots_.assign(slots_.size(), Slot{});
    bytes_.clear();
    tokens_.clear();
    size_ = 0;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(1024, old.size() * 2), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.tokens_size == 0) continue;
      std::size_t i = s.hash & mask_;
      while (slots_[i].tokens_size != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_ = std::vector<Slot>(1024);
  std::size_t mask_ = 1023, size_ = 0;
  std::string bytes_;
  std::vector<std::int32_t> tokens_;
};

ByteBpe::ByteBpe(std::shared_ptr<const Vocab> vocab)
    : vocab_(std::move(vocab)), recent_(std::make_unique<RecentPieces>()), cache_(std::make_unique<PieceCache>()) {}
ByteBpe::ByteBpe(const ByteBpe& other) : ByteBpe(other.vocab_) {}
ByteBpe::ByteBpe(ByteBpe&&) noexcept = default;
ByteBpe::~ByteBpe() = default;

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

  // Which expression cuts the text: a Split pre-tokenizer's pattern, or ByteLevel's own (GPT-2's).
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

  auto v = std::make_shared<Vocab>();
  v->pre = *pre;
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
    std::string left, right;
    if (m.is_string()) {  // "Ġ t" (tokenizers before 0.20)
      const std::string s = m.get<std::string>();
      const auto space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        throw TokenizerError(f + ": merge " + std::to_string(rank) + " ('" + s + "') is not two tokens");
      left = s.substr(0, space), right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["Ġ", "t"]
      left = m[0].get<std::string>(), right = m[1].get<std::string>();
    } else {
      throw TokenizerError(f + ": merge " + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
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

std::int32_t ByteBpe::vocab_size() const {
  return static_cast<std::int32_t>(vocab_->bytes_of.size());
}
PreTokenizer ByteBpe::pre_tokenizer() const {
  return vocab_->pre;
}
std::int32_t ByteBpe::begin_of_text() const {
  return vocab_->begin;
}
std::int32_t ByteBpe::end_of_text() const {
  return vocab_->end;
}
std::int32_t ByteBpe::id_of(const std::string& token) const {
  return vocab_->find(token);
}

void ByteBpe::bpe(std::string_view piece, std::vector<std::int32_t>& out) {
  const Vocab& v = *vocab_;
  if (v.ignore_merges)
    if (const std::int32_t whole = recent_->id_of(piece, v); whole >= 0) {
      out.push_back(whole);
      return;
    }
  const std::uint64_t hash = TokenIndex::hash_of(piece);
  if (cache_->append(piece, hash, out)) return;
  // Each symbol is a run of the piece's bytes (symbol k: bytes starts[k] to starts[k + 1]), so under
  // tiktoken's rule two adjacent symbols' concatenation is a slice of the piece, looked up as it is.
  std::vector<std::int32_t>& symbols = symbols_;
  std::vector<std::uint32_t>& starts = starts_;
  symbols.clear();
  starts.clear();
  for (std::size_t k = 0; k < piece.size(); ++k) {
    symbols.push_back(v.byte_id[static_cast<unsigned char>(piece[k])]);
    starts.push_back(static_cast<std::uint32_t>(k));
  }
  starts.push_back(static_cast<std::uint32_t>(piece.size()));
  // The merge of symbols k and k + 1, if any.
  constexpr std::int32_t kNone = std::numeric_limits<std::int32_t>::max();
  const auto pair_at = [&](std::size_t k) -> Vocab::Merge {
    if (v.merge_by_concatenation) {
      const std::int32_t id = recent_->id_of(piece.substr(starts[k], starts[k + 2] - starts[k]), v);
      return id < 0 ? Vocab::Merge{kNone, -1} : Vocab::Merge{id, id};
    }
    const auto m = v.merges.find(Vocab::pair(symbols[k], symbols[k + 1]));
    return m == v.merges.end() ? Vocab::Merge{kNone, -1} : m->second;
  };
  // Each adjacent pair's merge, kept beside the symbols and looked up again only where a merge changed
  // a pair: a piece of n bytes takes O(n) lookups, not O(n) for each of its up to n − 1 merges (the
  // kernel documentation's translations have pieces of hundreds of bytes).
  std::vector<Vocab::Merge>& pairs = pairs_;  // pairs[k]: symbols k and k + 1's; rank kNone: none
  std::vector<char>& merged = merged_;        // merged[k]: symbol k is this pass's merge
  pairs.assign(symbols.size(), Vocab::Merge{kNone, -1});
  merged.assign(symbols.size(), 0);
  for (std::size_t k = 0; k + 1 < symbols.size(); ++k) pairs[k] = pair_at(k);
  while (symbols.size() > 1) {
    std::size_t at = 0;  // the first pair of the lowest rank
    for (std::size_t k = 1; k + 1 < symbols.size(); ++k)
      if (pairs[k].rank < pairs[at].rank) at = k;
    if (pairs[at].rank == kNone) break;
    // Every occurrence of the pair, left to right: the first is at `at` (the first of the best).
    const std::int32_t first = symbols[at], second = symbols[at + 1], result = pairs[at].result;
    std::size_t w = at;
    for (std::size_t k = at; k < symbols.size(); ++w) {
      const bool merge = k + 1 < symbols.size() && symbols[k] == first && symbols[k + 1] == second;
      symbols[w] = merge ? result : symbols[k];
      starts[w] = starts[k];
      merged[w] = merge;
      pairs[w] = pairs[k];  // still right where neither symbol of the pair changed
      k += merge ? 2 : 1;
    }
    symbols.resize(w);
    starts.resize(w);
    starts.push_back(static_cast<std::uint32_t>(piece.size()));
    for (std::size_t k = at > 0 ? at - 1 : 0; k + 1 < w; ++k)
      if (merged[k] || merged[k + 1]) pairs[k] = pair_at(k);
    std::fill(merged.begin() + static_cast<std::ptrdiff_t>(at), merged.begin() + static_cast<std::ptrdiff_t>(w), 0);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  cache_->add(piece, hash, symbols);
}

std::vector<std::int32_t> ByteBpe::encode(std::string_view text) {
  std::vector<std::int32_t> out;
  out.reserve(text.size() / 3);
  encode(text, out);
  return out;
}

void ByteBpe::encode(std::string_view text, std::vector<std::int32_t>& out) {
  // Malformed UTF-8 reads as U+FFFD, as a text decoder would hand it to the reference encoder.
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = to_utf8(utf8_to_code_points(text));
    text = repaired;
  }
  pieces_.clear();
  pre_tokenize(vocab_->pre, text, pieces_);
  for (const auto piece : pieces_) bpe(piece, out);
}

std::string ByteBpe::decode(const std::vector<std::int32_t>& ids) const {
  std::string out;
  for (const auto id : ids) {
    if (id < 0 || id >= vocab_size())
      throw TokenizerError("byte-level BPE: token id " + std::to_string(id) + " is out of the vocabulary (" +
                           std::to_string(vocab_size()) + " ids)");
    out += vocab_->bytes_of[static_cast<std::size_t>(id)];
  }
  return out;
}

}  // namespace xpuperf::text
