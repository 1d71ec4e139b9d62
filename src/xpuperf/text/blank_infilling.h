#pragma once
// GLM's pre-training objective, autoregressive blank infilling (Du et al., "GLM: General Language
// Model Pretraining with Autoregressive Blank Infilling", as FlagPerf's glm case trains it): spans
// of a text, about 15 % of its tokens with lengths drawn from Poisson(3), are each replaced by one
// [MASK] in part A; part B then generates the spans in a random order, each as [sop] span → span
// [eop]. Positions are two-dimensional: the first is a token's place in part A (a part B token
// takes its span's [MASK]'s), the second 0 in part A and 1, 2, ... within each span. Part A
// attends both ways within itself; part B sees part A and its own earlier tokens. Torch-free.

#include <cstdint>
#include <random>
#include <vector>

#include "xpuperf/text/samples.h"
#include "xpuperf/text/token_file.h"

namespace xpuperf::text {

struct BlankSpecial {
  std::int32_t cls, mask, sop, eop, pad;
};

// One sample of `length` positions: ids and targets (−100 where there is no loss: part A and the
// padding after part B), the two position ids, and `sep`, part A's length.
struct BlankSample {
  std::vector<std::int32_t> ids, targets, positions, block_positions;
  std::int32_t sep = 0;
};

// How many text tokens a sample of `length` positions starts from: room is left for part B's
// [sop]s and part A's [CLS], enough for 1.5 × the spans that mask_share and mean_span expect.
std::int64_t blank_text_length(std::int64_t length, double mask_share = 0.15, double mean_span = 3.0);

// How many of a text's n tokens go into blanks: mask_share of them, at least one.
std::int64_t blank_masked_count(std::int64_t n, double mask_share = 0.15);

// The sample of `text` (n tokens, n + 1 ≤ length): spans drawn from `rng` until mask_share of the
// text is masked, none touching another; the last ones dropped when part B would not fit.
BlankSample make_blank_sample(const std::int32_t* text, std::int64_t n, std::int64_t length,
                              const BlankSpecial& special, std::mt19937_64& rng, double mask_share = 0.15,
                              double mean_span = 3.0);

// The split's documents as one stream of tokens, cut into texts of blank_text_length(length)
// tokens; sample i's spans are drawn from `seed` and i (the same sample wherever it is read).
class BlankSamples {
 public:
  BlankSamples(const TokenFile& file, DocumentRange documents, std::int64_t length, BlankSpecial special);
  std::int64_t size() const { return texts_.size(); }
  BlankSample get(std::int64_t sample, std::uint64_t seed) const;
  std::int64_t length() const { return length_; }
  // No sample has a target before this position (part A is at least the text less its masked
  // share, and [CLS]).
  std::int64_t first_target() const;

 private:
  std::int64_t length_, text_length_;
  BlankSpecial special_;
  GptSamples texts_;  // of text_length_ − 1 (+ 1) tokens each
};

}  // namespace xpuperf::text
