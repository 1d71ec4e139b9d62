#include "xpuperf/text/byte_bpe.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>

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
