#include "xpuperf/datasets/glm_datasets.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace xpuperf::datasets {

BlankInfillingDataset::BlankInfillingDataset(TokenSplit split, std::int64_t length, text::BlankSpecial special,
                                             std::uint64_t seed, bool dynamic_spans)
    : split_(std::move(split)),
      samples_(*split_.file, split_.documents, length, special),
      length_(length),
      seed_(seed),
      dynamic_(dynamic_spans) {
  description_ = split_.description + "; " + thousands(samples_.size()) + " texts of " +
                 std::to_string(text::blank_text_length(length)) + " tokens, 15 % of each in blanks of Poisson(3) " +
                 "tokens, filled in " + std::to_string(length) + " positions";
}

void BlankInfillingDataset::start_epoch(const EpochPlan& plan) {
  IndexedDataset::start_epoch(plan);
  epoch_ = plan.epoch;
}

Batch BlankInfillingDataset::get(const torch::Tensor& indices) const {
  const auto n = indices.size(0);
  const auto options = torch::TensorOptions().dtype(torch::kLong);
  auto ids = torch::empty({n, length_}, options), targets = torch::empty({n, length_}, options);
  auto positions = torch::empty({n, length_}, options), blocks = torch::empty({n, length_}, options);
  auto sep = torch::empty({n}, options);
  const auto* index = indices.data_ptr<std::int64_t>();
  const std::uint64_t seed = dynamic_ ? seed_ + 1000003ull * static_cast<std::uint64_t>(epoch_) : seed_;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto s = samples_.get(index[i], seed);
    std::copy(s.ids.begin(), s.ids.end(), ids.data_ptr<std::int64_t>() + i * length_);
    std::copy(s.targets.begin(), s.targets.end(), targets.data_ptr<std::int64_t>() + i * length_);
    std::copy(s.positions.begin(), s.positions.end(), positions.data_ptr<std::int64_t>() + i * length_);
    std::copy(s.block_positions.begin(), s.block_positions.end(), blocks.data_ptr<std::int64_t>() + i * length_);
    sep.data_ptr<std::int64_t>()[i] = s.sep;
  }
  return {ids, targets, positions, blocks, sep};
}

void RecordDataset::frame(Query& out, const text::RecordQuery& q, std::vector<std::int32_t> passage,
                          const text::WordPiece& wordpiece, bool& cut, const std::string& source) const {
  std::size_t longest = 0;
  for (const auto& f : out.fills) longest = std::max(longest, f.size());
  const auto at = q.query.find("@placeholder");
  const auto before = wordpiece.encode(q.query.substr(0, at));
  const auto after = wordpiece.encode(q.query.substr(at + std::string("@placeholder").size()));
  // [CLS] passage before [MASK] after, then [sop] fill: the fill's targets end in [eop].
  const auto fixed = static_cast<std::int64_t>(1 + before.size() + 1 + after.size() + 1 + longest);
  cut = fixed + static_cast<std::int64_t>(passage.size()) > length_;
  if (cut) {
    if (fixed > length_)
      throw ConfigError(source + ": query " + q.id + " and its longest candidate take " + std::to_string(fixed) +
                        " tokens, more than seq_length " + std::to_string(length_) + "; raise seq_length");
    passage.resize(static_cast<std::size_t>(length_ - fixed));
  }
  out.part_a.push_back(special_.cls);
  out.part_a.insert(out.part_a.end(), passage.begin(), passage.end());
  out.part_a.insert(out.part_a.end(), before.begin(), before.end());
  out.mask_at = static_cast<std::int32_t>(out.part_a.size());
  out.part_a.push_back(special_.mask);
  out.part_a.insert(out.part_a.end(), after.begin(), after.end());
}

RecordDataset::Query RecordDataset::with_fewer_candidates(const Query& q) const {
  // Keep the matching candidates, then the first others.
  std::vector<std::size_t> keep(q.fills.size());
  std::iota(keep.begin(), keep.end(), 0);
  std::stable_sort(keep.begin(), keep.end(), [&](std::size_t a, std::size_t b) { return q.exact[a] > q.exact[b]; });
  keep.resize(static_cast<std::size_t>(rows_));
  std::sort(keep.begin(), keep.end());
  Query cut = q;
  cut.fills.clear(), cut.exact.clear(), cut.f1.clear();
  for (const auto k : keep) {
    cut.fills.push_back(q.fills[k]);
    cut.exact.push_back(q.exact[k]);
    cut.f1.push_back(q.f1[k]);
  }
  return cut;
}

RecordDataset::RecordDataset(const std::vector<text::RecordQuery>& queries, const text::WordPiece& wordpiece,
                             Special special, std::int64_t length, std::int64_t candidates, bool training,
                             const std::string& source)
    : special_(special), length_(length) {
  std::int64_t without_answer = 0, cut_passages = 0, cut_candidates = 0;
  // A passage's queries come one after another (read_record_jsonl): its tokens and its candidates'
  // are encoded once for all of them.
  const text::RecordQuery* encoded = nullptr;
  std::vector<std::int32_t> passage_tokens;
  std::vector<std::vector<std::int32_t>> candidate_tokens;
  for (const auto& q : queries) {
    if (!encoded || encoded->passage != q.passage || encoded->candidates != q.candidates) {
      passage_tokens = wordpiece.encode(q.passage);
      candidate_tokens.clear();
      for (const auto& candidate : q.candidates) {
        candidate_tokens.push_back(wordpiece.encode(candidate));
        if (candidate_tokens.back().empty()) candidate_tokens.back().push_back(wordpiece.unk());
      }
      encoded = &q;
    }
    Query out;
    out.fills = candidate_tokens;
    for (std::size_t c = 0; c < q.candidates.size(); ++c) {
      out.exact.push_back(static_cast<float>(text::record_exact_match(q.candidates[c], q.answers)));
      out.f1.push_back(static_cast<float>(text::record_f1(q.candidates[c], q.answers)));
    }
    if (out.fills.empty() || (training && *std::max_element(out.exact.begin(), out.exact.end()) == 0)) {
      ++without_answer;
      if (training) continue;
    }
    bool cut = false;
    frame(out, q, passage_tokens, wordpiece, cut, source);
    if (cut) ++cut_passages;
    most_ = std::max(most_, static_cast<std::int64_t>(out.fills.size()));
    queries_.push_back(std::move(out));
  }
  if (most_ == 0)
    throw ConfigError(source + ": no query has a candidate entity (ReCoRD's passages list them under \"entities\")");
  rows_ = candidates > 0 ? std::min(candidates, most_) : most_;
  for (auto& q : queries_) {
    if (static_cast<std::int64_t>(q.fills.size()) <= rows_) continue;
    if (!training)
      throw ConfigError(source + ": a query has " + std::to_string(q.fills.size()) + " candidates, more than " +
                        "max_candidates " + std::to_string(rows_) + "; evaluation scores every candidate (set " +
                        "max_candidates to 0 or to at least that)");
    q = with_fewer_candidates(q);
    ++cut_candidates;
  }
  if (queries_.empty())
    throw ConfigError(source + ": no query has a candidate entity that matches its answers (is it ReCoRD's " +
                      "train or val split? the test split has no answers)");
  description_ =
      "ReCoRD " + source + ": " + thousands(size()) + " queries, " + std::to_string(rows_) + " candidate rows each";
  if (without_answer > 0)
    description_ += training ? ", " + thousands(without_answer) + " without a matching candidate left out"
                             : ", " + thousands(without_answer) + " without a matching candidate (scored 0)";
  if (cut_passages > 0) description_ += ", " + thousands(cut_passages) + " passages cut to fit";
  if (cut_candidates > 0) description_ += ", " + thousands(cut_candidates) + " queries' candidates cut to fit";
}

Batch RecordDataset::get(const torch::Tensor& indices) const {
  const auto n = indices.size(0), rows = n * rows_;
  const auto options = torch::TensorOptions().dtype(torch::kLong);
  auto ids = torch::full({rows, length_}, special_.pad, options), targets = torch::full({rows, length_}, -100, options);
  auto positions = torch::zeros({rows, length_}, options), blocks = torch::zeros({rows, length_}, options);
  auto sep = torch::ones({rows}, options);
  auto valid = torch::zeros({n, rows_}, torch::kBool);
  auto exact = torch::zeros({n, rows_}, torch::kFloat), f1 = torch::zeros({n, rows_}, torch::kFloat);
  const auto* index = indices.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    const auto& q = queries_.at(static_cast<std::size_t>(index[i]));
    for (std::size_t c = 0; c < q.fills.size(); ++c) {
      const auto row = i * rows_ + static_cast<std::int64_t>(c);
      auto* row_ids = ids.data_ptr<std::int64_t>() + row * length_;
      auto* row_targets = targets.data_ptr<std::int64_t>() + row * length_;
      auto* row_positions = positions.data_ptr<std::int64_t>() + row * length_;
      auto* row_blocks = blocks.data_ptr<std::int64_t>() + row * length_;
      const auto a = static_cast<std::int64_t>(q.part_a.size());
      std::copy(q.part_a.begin(), q.part_a.end(), row_ids);
      std::iota(row_positions, row_positions + a, 0);
      const auto& fill = q.fills[c];
      for (std::size_t k = 0; k <= fill.size(); ++k) {
        const auto at = a + static_cast<std::int64_t>(k);
        row_ids[at] = k == 0 ? special_.sop : fill[k - 1];
        row_targets[at] = k < fill.size() ? fill[k] : special_.eop;
        row_positions[at] = q.mask_at;
        row_blocks[at] = static_cast<std::int64_t>(k + 1);
      }
      sep.data_ptr<std::int64_t>()[row] = a;
      valid.data_ptr<bool>()[row] = true;
      exact.data_ptr<float>()[row] = q.exact[c];
      f1.data_ptr<float>()[row] = q.f1[c];
    }
  }
  return {valid, exact, f1, ids, targets, positions, blocks, sep};
}

}  // namespace xpuperf::datasets
