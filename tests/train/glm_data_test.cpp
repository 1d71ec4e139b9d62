// ReCoRD as GLM's cloze (train/glm_datasets.h): each candidate a row of part A ([CLS] passage query,
// the blank a [MASK]) and its fill ([sop] entity → entity [eop]), with what training and evaluation
// keep of the queries.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"
#include "xpuperf/core/config.h"
#include "xpuperf/datasets/glm_datasets.h"

namespace xpuperf::train {
namespace {

// [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, linux 5, debian 6, released 7, it 8, . 9, greg 10
text::WordPiece tiny_vocabulary(const test::TempDir& dir) {
  return text::WordPiece::load(
      dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nlinux\ndebian\nreleased\nit\n.\ngreg\n"));
}

const datasets::RecordDataset::Special kSpecial{2, 4, 11, 12, 0};

text::RecordQuery query(std::vector<std::string> answers) {
  return {"Linux released it.", "@placeholder released it", {"Linux", "Debian", "Greg"}, std::move(answers), "0/0"};
}

TEST(RecordRows, EachCandidateFillsTheBlankOfPartAInItsOwnRow) {
  test::TempDir dir;
  const auto wp = tiny_vocabulary(dir);
  const datasets::RecordDataset d({query({"Linux"})}, wp, kSpecial, 16, 0, true, "t.jsonl");
  ASSERT_EQ(d.size(), 1);
  ASSERT_EQ(d.candidates(), 3);
  const auto b = d.get(torch::tensor({0}, torch::kLong));
  ASSERT_EQ(b.size(), 8u);
  EXPECT_TRUE(torch::equal(b[0], torch::ones({1, 3}, torch::kBool)));    // every row a candidate
  EXPECT_TRUE(torch::equal(b[1], torch::tensor({{1.0f, 0.0f, 0.0f}})));  // exact match
  EXPECT_TRUE(torch::equal(b[2], torch::tensor({{1.0f, 0.0f, 0.0f}})));  // F1
  const auto& ids = b[3];
  const auto& targets = b[4];
  ASSERT_EQ(ids.sizes(), torch::IntArrayRef({3, 16}));
  // Part A: [CLS] linux released it . [MASK] released it — the blank at position 5, 8 tokens.
  const auto part_a = torch::tensor({2, 5, 7, 8, 9, 4, 7, 8}, torch::kLong);
  for (int row = 0; row < 3; ++row) {
    EXPECT_TRUE(torch::equal(ids[row].narrow(0, 0, 8), part_a)) << ids[row];
    EXPECT_EQ(b[7][row].item<std::int64_t>(), 8);                                               // sep
    EXPECT_EQ(ids[row][8].item<std::int64_t>(), 11);                                            // [sop]
    EXPECT_EQ(targets[row][9].item<std::int64_t>(), 12);                                        // [eop]
    EXPECT_TRUE(torch::equal(b[5][row].narrow(0, 8, 2), torch::tensor({5, 5}, torch::kLong)));  // at the [MASK]
    EXPECT_TRUE(torch::equal(b[6][row].narrow(0, 8, 2), torch::tensor({1, 2}, torch::kLong)));  // within the fill
    EXPECT_TRUE(targets[row].narrow(0, 0, 8).eq(-100).all().item<bool>());
    EXPECT_TRUE(targets[row].narrow(0, 10, 6).eq(-100).all().item<bool>());
  }
  // Each row's fill: its entity, predicted from [sop].
  for (const auto& [row, id] : std::vector<std::pair<int, std::int64_t>>{{0, 5}, {1, 6}, {2, 10}}) {
    EXPECT_EQ(targets[row][8].item<std::int64_t>(), id);
    EXPECT_EQ(ids[row][9].item<std::int64_t>(), id);
  }
}

TEST(RecordRows, TrainingKeepsQueriesItCanLearnAndTheirMatchingCandidatesFirst) {
  test::TempDir dir;
  const auto wp = tiny_vocabulary(dir);
  // A query whose answer is no candidate teaches nothing: left out in training, scored 0 in evaluation.
  const datasets::RecordDataset train({query({"Linux"}), query({"BSD"})}, wp, kSpecial, 16, 0, true, "t.jsonl");
  EXPECT_EQ(train.size(), 1);
  EXPECT_NE(train.description().find("1 without a matching candidate left out"), std::string::npos)
      << train.description();
  const datasets::RecordDataset eval({query({"Linux"}), query({"BSD"})}, wp, kSpecial, 16, 0, false, "v.jsonl");
  EXPECT_EQ(eval.size(), 2);
  // At most two rows: the matching candidate (Greg) is kept, then the first other, in their order.
  const datasets::RecordDataset capped({query({"greg"})}, wp, kSpecial, 16, 2, true, "t.jsonl");
  EXPECT_EQ(capped.candidates(), 2);
  const auto b = capped.get(torch::tensor({0}, torch::kLong));
  EXPECT_TRUE(torch::equal(b[1], torch::tensor({{0.0f, 1.0f}})));
  EXPECT_EQ(b[3][1][9].item<std::int64_t>(), 10);  // greg
  // A passage is cut at its end to fit; a query that cannot fit is refused, naming seq_length.
  const datasets::RecordDataset cut({query({"Linux"})}, wp, kSpecial, 8, 0, true, "t.jsonl");
  EXPECT_NE(cut.description().find("1 passages cut to fit"), std::string::npos) << cut.description();
  EXPECT_THROW(datasets::RecordDataset({query({"Linux"})}, wp, kSpecial, 5, 0, true, "t.jsonl"), ConfigError);
  text::RecordQuery none = query({"Linux"});
  none.candidates.clear();
  EXPECT_THROW(datasets::RecordDataset({none}, wp, kSpecial, 16, 0, false, "v.jsonl"), ConfigError);
}

}  // namespace
}  // namespace xpuperf::train
