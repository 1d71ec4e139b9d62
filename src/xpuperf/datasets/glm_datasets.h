#pragma once
// GLM's data: blank-infilling samples of a token dataset (the glm case's pre-training,
// text/blank_infilling.h) and ReCoRD's queries with each candidate entity as the blank's fill
// (the glm_record case, text/record.h). Both give GLM's inputs as models/glm.h takes them.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/datasets/token_datasets.h"
#include "xpuperf/text/blank_infilling.h"
#include "xpuperf/text/record.h"
#include "xpuperf/text/wordpiece.h"

namespace xpuperf::datasets {

// Batches of ids, targets, positions, block positions (each (batch, length)) and sep (batch).
// Training draws a sample's spans anew each epoch; evaluation draws the same every time.
class BlankInfillingDataset : public IndexedDataset {
 public:
  BlankInfillingDataset(TokenSplit split, std::int64_t length, text::BlankSpecial special, std::uint64_t seed,
                        bool dynamic_spans);
  std::int64_t size() const override { return samples_.size(); }
  std::string description() const override { return description_; }
  void start_epoch(const EpochPlan& plan) override;
  Batch get(const torch::Tensor& indices) const override;
  std::int64_t first_target() const { return samples_.first_target(); }

 private:
  TokenSplit split_;
  text::BlankSamples samples_;
  std::int64_t length_;
  std::uint64_t seed_;
  bool dynamic_;
  std::int64_t epoch_ = 0;
  std::string description_;
};

// ReCoRD as GLM's cloze: part A is [CLS] passage query, the query's @placeholder a [MASK]; each
// candidate entity is one row whose part B fills the blank ([sop] entity → entity [eop]). A sample
// is a query: `candidates` rows (the query's, then padding rows), so a batch of n queries gives,
// per query and candidate (n, candidates), whether the row is a candidate (bool) and its exact
// match and F1 against the answers (float), first, so that the runtime counts queries; then the
// rows' ids, targets, positions and block positions (n × candidates, length) and sep
// (n × candidates). A passage is cut at its end where the query and the longest candidate would
// not fit.
class RecordDataset : public IndexedDataset {
 public:
  struct Special {
    std::int32_t cls, mask, sop, eop, pad;
  };
  // `candidates`: rows a query at most (0: the most any query has). In training, queries without a
  // candidate that matches an answer are left out (they teach nothing), and a query with more
  // candidates than rows keeps the matching ones first.
  RecordDataset(const std::vector<text::RecordQuery>& queries, const text::WordPiece& wordpiece, Special special,
                std::int64_t length, std::int64_t candidates, bool training, const std::string& source);
  std::int64_t size() const override { return static_cast<std::int64_t>(queries_.size()); }
  std::string description() const override { return description_; }
  Batch get(const torch::Tensor& indices) const override;
  std::int64_t candidates() const { return rows_; }
  std::int64_t most_candidates() const { return most_; }

 private:
  struct Query {
    std::vector<std::int32_t> part_a;
    std::int32_t mask_at = 0;
    std::vector<std::vector<std::int32_t>> fills;
    std::vector<float> exact, f1;
  };
  // out's part A, [CLS] passage before [MASK] after, the passage cut to leave room for the query and
  // its longest fill within the length (`cut` says whether it was); ConfigError where even that
  // does not fit.
  void frame(Query& out, const text::RecordQuery& q, std::vector<std::int32_t> passage,
             const text::WordPiece& wordpiece, bool& cut, const std::string& source) const;
  // The query with `rows_` candidates: the matching ones first, then the first others.
  Query with_fewer_candidates(const Query& q) const;
  std::vector<Query> queries_;
  Special special_;
  std::int64_t length_, rows_ = 0, most_ = 0;
  std::string description_;
};

}  // namespace xpuperf::datasets
