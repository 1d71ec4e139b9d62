#include "xpuperf/text/blank_infilling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::text {

std::int64_t blank_text_length(std::int64_t length, double mask_share, double mean_span) {
  return static_cast<std::int64_t>(std::floor(static_cast<double>(length - 1) / (1 + 3 * mask_share / mean_span)));
}

std::int64_t blank_masked_count(std::int64_t n, double mask_share) {
  return std::max<std::int64_t>(1, std::llround(mask_share * static_cast<double>(n)));
}

BlankSample make_blank_sample(const std::int32_t* text, std::int64_t n, std::int64_t length,
                              const BlankSpecial& special, std::mt19937_64& rng, double mask_share, double mean_span) {
  if (n < 1 || n + 1 > length)
    throw TokenizerError("blank infilling: a text of " + std::to_string(n) + " tokens does not fit a sample of " +
                         std::to_string(length));
  // Span lengths: Poisson(mean_span) given at least 1, until mask_share of the text is covered.
  std::poisson_distribution<std::int64_t> poisson(mean_span);
  const auto wanted = blank_masked_count(n, mask_share);
  std::vector<std::int64_t> spans;
  std::int64_t masked = 0;
  while (masked < wanted) {
    std::int64_t l = 0;
    while (l < 1) l = poisson(rng);
    l = std::min(l, wanted - masked);
    spans.push_back(l);
    masked += l;
  }
  // Each span costs a [MASK] in A and a [sop] in B beyond its tokens; spans are kept apart by an
  // unmasked token, so s spans need s − 1 of them.
  const auto fits = [&] {
    const auto s = static_cast<std::int64_t>(spans.size());
    return 1 + n + 2 * s <= length && n - masked >= s - 1;
  };
  while (!spans.empty() && !fits()) {
    masked -= spans.back();
    spans.pop_back();
  }
  const auto s = static_cast<std::int64_t>(spans.size());
  // Where the spans go: s distinct gaps among the n − masked + 1 around the unmasked tokens.
  std::vector<std::int64_t> gaps(static_cast<std::size_t>(n - masked + 1));
  std::iota(gaps.begin(), gaps.end(), 0);
  for (std::int64_t i = 0; i < s; ++i) {
    std::uniform_int_distribution<std::int64_t> pick(i, static_cast<std::int64_t>(gaps.size()) - 1);
    std::swap(gaps[static_cast<std::size_t>(i)], gaps[static_cast<std::size_t>(pick(rng))]);
  }
  gaps.resize(static_cast<std::size_t>(s));
  std::sort(gaps.begin(), gaps.end());

  BlankSample out;
  const auto L = static_cast<std::size_t>(length);
  out.ids.reserve(L);
  out.ids.push_back(special.cls);
  std::vector<std::int64_t> span_start(static_cast<std::size_t>(s)), mask_at(static_cast<std::size_t>(s));
  std::int64_t t = 0, unmasked = 0;
  for (std::int64_t k = 0; k < s; ++k) {
    for (; unmasked < gaps[static_cast<std::size_t>(k)]; ++unmasked) out.ids.push_back(text[t++]);
    mask_at[static_cast<std::size_t>(k)] = static_cast<std::int64_t>(out.ids.size());
    out.ids.push_back(special.mask);
    span_start[static_cast<std::size_t>(k)] = t;
    t += spans[static_cast<std::size_t>(k)];
  }
  while (t < n) out.ids.push_back(text[t++]);
  out.sep = static_cast<std::int32_t>(out.ids.size());
  out.targets.assign(out.ids.size(), -100);
  out.positions.resize(out.ids.size());
  std::iota(out.positions.begin(), out.positions.end(), 0);
  out.block_positions.assign(out.ids.size(), 0);
  // Part B: the spans in a random order, each [sop] span predicting span [eop].
  std::vector<std::int64_t> order(static_cast<std::size_t>(s));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (const auto k : order) {
    const auto l = spans[static_cast<std::size_t>(k)], start = span_start[static_cast<std::size_t>(k)];
    const auto position = static_cast<std::int32_t>(mask_at[static_cast<std::size_t>(k)]);
    for (std::int64_t i = 0; i <= l; ++i) {
      out.ids.push_back(i == 0 ? special.sop : text[start + i - 1]);
      out.targets.push_back(i < l ? text[start + i] : special.eop);
      out.positions.push_back(position);
      out.block_positions.push_back(static_cast<std::int32_t>(i + 1));
    }
  }
  out.ids.resize(L, special.pad);
  out.targets.resize(L, -100);
  out.positions.resize(L, 0);
  out.block_positions.resize(L, 0);
  return out;
}

BlankSamples::BlankSamples(const TokenFile& file, DocumentRange documents, std::int64_t length, BlankSpecial special)
    : length_(length),
      text_length_(blank_text_length(length)),
      special_(special),
      texts_(file, documents, std::max<std::int64_t>(1, text_length_ - 1)) {
  if (length < 16) throw TokenizerError("blank infilling: a sequence length of 16 or more is needed");
}

std::int64_t BlankSamples::first_target() const {
  return 1 + text_length_ - blank_masked_count(text_length_);
}

BlankSample BlankSamples::get(std::int64_t sample, std::uint64_t seed) const {
  std::vector<std::int32_t> text(static_cast<std::size_t>(text_length_));
  texts_.read(sample, text.data());
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(sample));
  return make_blank_sample(text.data(), text_length_, length_, special_, rng);
}

}  // namespace xpuperf::text
