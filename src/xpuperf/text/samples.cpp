#include "xpuperf/text/samples.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::text {

DocumentRange split_documents(const TokenFile& file, double valid_share, bool valid) {
  const std::int64_t n = file.documents();
  std::int64_t held = static_cast<std::int64_t>(std::ceil(valid_share * static_cast<double>(n)));
  if (valid_share > 0 && n >= 2) held = std::clamp<std::int64_t>(held, 1, n - 1);
  if (valid_share <= 0 || n < 2) held = 0;
  return valid ? DocumentRange{n - held, n} : DocumentRange{0, n - held};
}

GptSamples::GptSamples(const TokenFile& file, DocumentRange documents, std::int64_t length)
    : file_(file), length_(length) {
  if (length <= 0) throw TokenizerError("GPT samples: the sequence length must be positive");
  if (documents.last <= documents.first) return;
  start_ = file.document_start(documents.first);
  const std::int64_t end = file.document_start(documents.last);
  // Sample i is tokens [start + i·length, start + (i+1)·length], its last one the next sample's first.
  count_ = end - start_ > length ? (end - start_ - 1) / length : 0;
}

void GptSamples::read(std::int64_t sample, std::int32_t* out) const {
  file_.read(start_ + sample * length_, length_ + 1, out);
}

void GptSamples::documents(std::int64_t sample, std::int32_t* out) const {
  const std::int64_t first = start_ + sample * length_;
  // The document holding the first token: the last one that starts at or before it.
  std::int64_t lo = 0, hi = file_.documents();
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    (file_.document_start(mid) <= first ? lo : hi) = mid;
  }
  std::int32_t number = 0;
  std::int64_t next = file_.document_start(lo + 1);
  for (std::int64_t i = 0; i <= length_; ++i) {
    while (first + i >= next) {
      ++number;
      next = file_.document_start(lo + 1 + number);
    }
    out[i] = number;
  }
}

BertSamples::BertSamples(const TokenFile& file, DocumentRange documents, std::int64_t length, Special special)
    : file_(file), length_(length), special_(special) {
  if (length < 8) throw TokenizerError("BERT samples: a sequence length of 8 or more is needed");
  const std::int64_t room = length - 2;
  for (std::int64_t d = documents.first; d < documents.last; ++d) {
    const std::int64_t last = file.document_first(d + 1);
    for (std::int64_t s = file.document_first(d); s < last;) {
      std::int64_t tokens = file.sequence_length(s), count = 1;
      while (s + count < last && tokens + file.sequence_length(s + count) <= room)
        tokens += file.sequence_length(s + count++);
      spans_.push_back({s, count, tokens});
      s += count;
    }
  }
}

std::int64_t BertSamples::real_length(std::int64_t sample) const {
  return std::min(spans_.at(static_cast<std::size_t>(sample)).tokens, length_ - 2) + 2;
}

std::int64_t BertSamples::masked_count(std::int64_t real_length, double mask_share) {
  const std::int64_t candidates = std::max<std::int64_t>(0, real_length - 2);
  return std::max<std::int64_t>(candidates == 0 ? 0 : 1, std::lround(mask_share * static_cast<double>(candidates)));
}

std::vector<std::vector<std::int64_t>> pack_best_fit(const std::vector<std::int64_t>& lengths, std::int64_t capacity) {
  std::vector<std::int64_t> order(lengths.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return lengths[static_cast<std::size_t>(a)] > lengths[static_cast<std::size_t>(b)];
  });
  std::vector<std::vector<std::int64_t>> rows;
  std::multimap<std::int64_t, std::size_t> room;  // a row's free tokens → the row
  for (const std::int64_t sample : order) {
    const std::int64_t length = lengths[static_cast<std::size_t>(sample)];
    if (length > capacity || length < 0)
      throw TokenizerError("sequence packing: a sample of " + std::to_string(length) + " tokens does not fit rows of " +
                           std::to_string(capacity));
    const auto fit = room.lower_bound(length);
    std::size_t row = rows.size();
    std::int64_t left = capacity;
    if (fit == room.end()) {
      rows.emplace_back();
    } else {
      std::tie(left, row) = *fit;
      room.erase(fit);
    }
    rows[row].push_back(sample);
    room.emplace(left - length, row);
  }
  return rows;
}

BertSample BertSamples::get(std::int64_t sample, std::uint64_t seed, double mask_share) const {
  const Span& span = spans_.at(static_cast<std::size_t>(sample));
  BertSample out;
  out.ids.reserve(static_cast<std::size_t>(length_));
  out.ids.push_back(special_.cls);
  for (std::int64_t s = span.first_sequence; s < span.first_sequence + span.sequences; ++s) {
    const auto tokens = file_.sequence(s);
    const auto room = static_cast<std::size_t>(length_ - 1) - out.ids.size();
    out.ids.insert(out.ids.end(), tokens.begin(),
                   tokens.begin() + static_cast<std::ptrdiff_t>(std::min(room, tokens.size())));
  }
  out.ids.push_back(special_.sep);
  const auto real = out.ids.size();
  out.keep.assign(real, 1);
  out.keep.resize(static_cast<std::size_t>(length_), 0);
  out.ids.resize(static_cast<std::size_t>(length_), special_.pad);
  out.labels.assign(static_cast<std::size_t>(length_), -100);
  // The same masking for the same seed and sample, wherever it is read.
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(sample));
  std::vector<std::size_t> candidates;
  for (std::size_t i = 1; i + 1 < real; ++i) candidates.push_back(i);
  std::shuffle(candidates.begin(), candidates.end(), rng);
  const auto masked = static_cast<std::size_t>(masked_count(static_cast<std::int64_t>(real), mask_share));
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<std::int32_t> any(0, special_.vocab_size - 1);
  for (std::size_t k = 0; k < masked && k < candidates.size(); ++k) {
    const std::size_t i = candidates[k];
    out.labels[i] = out.ids[i];
    const double r = u(rng);
    if (r < 0.8)
      out.ids[i] = special_.mask;
    else if (r < 0.9)
      out.ids[i] = any(rng);
  }
  return out;
}

}  // namespace xpuperf::text
