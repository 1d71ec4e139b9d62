// GLM's data, torch-free: blank-infilling samples (text/blank_infilling.h) and SuperGLUE's ReCoRD as
// its JSON lines hold it, with ReCoRD's scores (text/record.h).

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "test_util.h"
#include "xpuperf/text/blank_infilling.h"
#include "xpuperf/text/record.h"
#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::text {
namespace {

const BlankSpecial kSpecial{101, 103, 30522, 30523, 0};

// A text whose tokens are their own places (1000, 1001, ...), so a target names where it came from.
std::vector<std::int32_t> numbered_text(std::int64_t n) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  std::iota(t.begin(), t.end(), 1000);
  return t;
}

TEST(BlankInfilling, PartBRegeneratesEachBlankOfPartAFromItsMaskPosition) {
  const std::int64_t length = 512, n = blank_text_length(length);
  EXPECT_EQ(n, 444);  // room for 1.5 × the 22 spans that 15 % in Poisson(3) blanks expect
  const auto text = numbered_text(n);
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    std::mt19937_64 rng(seed);
    const BlankSample s = make_blank_sample(text.data(), n, length, kSpecial, rng);
    ASSERT_EQ(s.ids.size(), static_cast<std::size_t>(length));
    ASSERT_EQ(s.targets.size(), s.ids.size());
    ASSERT_EQ(s.ids[0], kSpecial.cls);
    const auto sep = static_cast<std::size_t>(s.sep);
    // Part A: the text in order with each blank one [MASK]; no targets, positions 0, 1, ...
    std::vector<std::size_t> masks;
    std::int32_t expected_next = 1000;
    std::vector<std::pair<std::int32_t, std::int32_t>> gaps;  // (first missing token, mask position)
    for (std::size_t i = 1; i < sep; ++i) {
      ASSERT_EQ(s.targets[i], -100);
      ASSERT_EQ(s.positions[i], static_cast<std::int32_t>(i));
      ASSERT_EQ(s.block_positions[i], 0);
      if (s.ids[i] == kSpecial.mask) {
        ASSERT_NE(s.ids[i - 1], kSpecial.mask) << "two blanks touch";
        masks.push_back(i);
        gaps.push_back({expected_next, static_cast<std::int32_t>(i)});
        expected_next = -1;  // the span's length is part B's to say
      } else {
        if (expected_next >= 0) {
          ASSERT_EQ(s.ids[i], expected_next);
        }
        expected_next = s.ids[i] + 1;
      }
    }
    // Part B: each blank once, [sop] then its tokens, the targets shifted by one and ending in [eop],
    // at its [MASK]'s position, block positions 1, 2, ...
    std::int64_t masked = 0;
    std::set<std::int32_t> filled;
    std::size_t i = sep;
    while (i < s.ids.size() && s.ids[i] == kSpecial.sop) {
      const std::int32_t at = s.positions[i];
      ASSERT_TRUE(filled.insert(at).second) << "a blank filled twice";
      ASSERT_EQ(s.ids[static_cast<std::size_t>(at)], kSpecial.mask);
      std::int32_t k = 0;
      for (; s.targets[i + static_cast<std::size_t>(k)] != kSpecial.eop; ++k) {
        const auto j = i + static_cast<std::size_t>(k);
        ASSERT_EQ(s.positions[j], at);
        ASSERT_EQ(s.block_positions[j], k + 1);
        if (k > 0) {
          ASSERT_EQ(s.ids[j], s.targets[j - 1]);
          ASSERT_EQ(s.targets[j], s.targets[j - 1] + 1);  // consecutive text tokens
        }
      }
      ASSERT_GE(k, 1);
      // The blank's tokens are the text the mask replaced: the first follows the token before it.
      const auto before = s.ids[static_cast<std::size_t>(at) - 1];
      ASSERT_EQ(s.targets[i], before == kSpecial.cls ? 1000 : before + 1);
      masked += k;
      i += static_cast<std::size_t>(k) + 1;
    }
    EXPECT_EQ(filled.size(), masks.size());
    EXPECT_EQ(masked, 67);           // 15 % of 444, all of it: the spans always fit this length
    for (; i < s.ids.size(); ++i) {  // padding
      ASSERT_EQ(s.ids[i], kSpecial.pad);
      ASSERT_EQ(s.targets[i], -100);
    }
  }
}

TEST(BlankInfilling, TheSameSeedGivesTheSameSampleAndAnotherDiffers) {
  const auto text = numbered_text(40);
  std::mt19937_64 a(7), b(7), c(8);
  const auto x = make_blank_sample(text.data(), 40, 64, kSpecial, a);
  const auto y = make_blank_sample(text.data(), 40, 64, kSpecial, b);
  const auto z = make_blank_sample(text.data(), 40, 64, kSpecial, c);
  EXPECT_EQ(x.ids, y.ids);
  EXPECT_EQ(x.targets, y.targets);
  EXPECT_NE(x.ids, z.ids);
}

TEST(BlankInfilling, ASampleTooShortForItsTextIsRefused) {
  const auto text = numbered_text(64);
  std::mt19937_64 rng(1);
  EXPECT_THROW(make_blank_sample(text.data(), 64, 64, kSpecial, rng), TokenizerError);
  // A tight length drops the spans that do not fit instead of overflowing.
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    std::mt19937_64 r(seed);
    const auto s = make_blank_sample(text.data(), 60, 64, kSpecial, r);
    EXPECT_EQ(s.ids.size(), 64u);
  }
}

std::string fixture(const std::string& name) {
  return std::string(XPUPERF_SOURCE_DIR) + "/tests/fixtures/record/" + name;
}

TEST(Record, TheJsonLinesGiveQueriesWithTheirPassagesEntitiesAndAnswers) {
  const auto queries = read_record_jsonl(fixture("train.jsonl"));
  ASSERT_EQ(queries.size(), 6u);
  const auto& first = queries[0];
  EXPECT_EQ(first.id, "0/0");
  EXPECT_EQ(first.query, "@placeholder released the kernel in December.");
  EXPECT_EQ(first.answers, std::vector<std::string>{"Linus Torvalds"});
  EXPECT_EQ(first.candidates,
            (std::vector<std::string>{"Linus Torvalds", "Linux 6.1", "Greg Kroah-Hartman", "Debian", "Debian 12"}));
  // GLM's spelling of the highlights.
  EXPECT_EQ(first.passage.find("@highlight"), std::string::npos);
  EXPECT_NE(first.passage.find("\n- Linux 6.1 is a long-term release\n- Debian 12 ships it"), std::string::npos);
  // Offsets count characters, not bytes: the entity after "Zürich" is whole.
  const auto& rust = queries[4];
  EXPECT_EQ(rust.candidates,
            (std::vector<std::string>{"Rust", "Miguel Ojeda", "Google", "Microsoft", "Zürich", "Seattle"}));
}

TEST(Record, ScoresAreSquadsExactMatchAndF1OverTheBestAnswer) {
  EXPECT_EQ(normalize_answer("The  Linux Kernel!"), "linux kernel");
  EXPECT_EQ(record_exact_match("the Linux kernel", {"Windows", "Linux Kernel."}), 1.0);
  EXPECT_EQ(record_exact_match("Linux", {"Linux kernel"}), 0.0);
  EXPECT_DOUBLE_EQ(record_f1("Linux", {"Linux kernel"}), 2 * 1.0 * 0.5 / 1.5);
  EXPECT_DOUBLE_EQ(record_f1("Greg Kroah-Hartman", {"Greg", "Kroah-Hartman Greg"}), 1.0);  // words, any order
  EXPECT_EQ(record_f1("BSD", {"Linux"}), 0.0);
  EXPECT_EQ(record_exact_match("Linux", {}), 0.0);  // the test split: no answers
}

TEST(Record, LinesThatAreNotReCoRDAreRefusedWithTheFileAndLine) {
  test::TempDir dir;
  const auto refused = [&](const std::string& line, const std::string& says) {
    const auto path = dir.path() + "/bad.jsonl";
    std::ofstream(path) << "\n" << line << "\n";
    try {
      read_record_jsonl(path);
      ADD_FAILURE() << "taken: " << line;
    } catch (const TokenizerError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path + ": line 2"), std::string::npos) << what;
      EXPECT_NE(what.find(says), std::string::npos) << what;
    }
  };
  refused("{not json", "is not JSON");
  refused(R"({"text": "a", "label": 1})", "no \"passage\"");
  refused(R"({"passage": {"text": "abc", "entities": [{"start": 1, "end": 3}]}, "qas": []})",
          "lies outside the passage's 3 characters");
  refused(R"({"passage": {"text": "abc", "entities": []}, "qas": [{"query": "no blank here"}]})",
          "has no @placeholder");
  EXPECT_THROW(read_record_jsonl(dir.path() + "/missing.jsonl"), TokenizerError);
}

}  // namespace
}  // namespace xpuperf::text
