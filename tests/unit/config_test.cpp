#include "xpuperf/core/config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace xpuperf {
namespace {

Config load(const std::string& text, Diagnostics& diags, const std::string& name = "x.yaml") {
  auto config = load_config_text(text, name, diags);
  EXPECT_TRUE(config.has_value()) << diags.format();
  return config ? *config : Config();
}

TEST(Config, RemembersFileAndLineOfEveryValue) {
  Diagnostics diags;
  const Config c = load("# comment\na: 1\n\nb: [1, 2]\nc:\n  d: 3\n", diags, "dir/f.yaml");
  EXPECT_FALSE(diags.has_errors());
  EXPECT_EQ(c.keys(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(c.at("a").source.str(), "dir/f.yaml:2");
  EXPECT_EQ(c.at("b").source.str(), "dir/f.yaml:4");
  EXPECT_EQ(c.at("c").source.str(), "dir/f.yaml:5");
}

TEST(Config, ReadsPlainScalarsAsYamlDoes) {
  Diagnostics diags;
  const Config c =
      load("i: 12\nf: 1e-4\ng: 0.5\nt: true\nn: ~\ne:\ns: fast\nq: \"12\"\nl: [a]\nm: {k: v}\nneg: -3\n", diags);
  EXPECT_EQ(value_kind(c.at("i").value), ValueKind::Int);
  EXPECT_EQ(value_kind(c.at("f").value), ValueKind::Float);
  EXPECT_EQ(value_kind(c.at("g").value), ValueKind::Float);
  EXPECT_EQ(value_kind(c.at("t").value), ValueKind::Bool);
  EXPECT_EQ(value_kind(c.at("n").value), ValueKind::Null);
  EXPECT_EQ(value_kind(c.at("e").value), ValueKind::Null);
  EXPECT_EQ(value_kind(c.at("s").value), ValueKind::String);
  EXPECT_EQ(value_kind(c.at("q").value), ValueKind::String);
  EXPECT_EQ(value_kind(c.at("l").value), ValueKind::List);
  EXPECT_EQ(value_kind(c.at("m").value), ValueKind::Map);
  EXPECT_EQ(c.get_int("i"), 12);
  EXPECT_EQ(c.get_int("neg"), -3);
  EXPECT_DOUBLE_EQ(c.get_number("f"), 1e-4);
  EXPECT_DOUBLE_EQ(c.get_number("i"), 12.0);
  EXPECT_TRUE(c.get_bool("t"));
  EXPECT_EQ(c.get_string("q"), "12");
  EXPECT_EQ(c.get_string("n"), "");
  EXPECT_EQ(c.get_string_list("l"), std::vector<std::string>{"a"});
}

TEST(Config, TypedGettersNameFileLineAndKey) {
  Diagnostics diags;
  const Config c = load("a: 1\nlr: fast\nflag: 3\nbatch: 0.5\n", diags, "cases/training/x/libtorch/config/_base.yaml");
  try {
    c.get_number("lr");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "cases/training/x/libtorch/config/_base.yaml:2: 'lr' must be a number, got \"fast\"");
  }
  EXPECT_THROW(c.get_bool("flag"), ConfigError);
  EXPECT_THROW(c.get_int("batch"), ConfigError);
  EXPECT_THROW(c.get_string_list("a"), ConfigError);
  try {
    c.get_int("bach");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "cases/training/x/libtorch/config/_base.yaml: missing key 'bach' (did you mean 'batch'?)");
  }
  EXPECT_EQ(c.get_int("missing", 7), 7);
}

TEST(Config, IntegralFloatsAreIntegers) {
  Diagnostics diags;
  const Config c = load("a: 1e3\nb: 64.0\nhuge: 99999999999999999999\ninf: .inf\n", diags);
  EXPECT_EQ(c.get_int("a"), 1000);
  EXPECT_EQ(c.get_int("b"), 64);
  EXPECT_THROW(c.get_int("huge"), ConfigError);
  EXPECT_THROW(c.get_int("inf"), ConfigError);
}

TEST(Config, ReportsInvalidYamlWithLine) {
  Diagnostics diags;
  EXPECT_FALSE(load_config_text("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml", diags));
  ASSERT_EQ(diags.error_count(), 1);
  EXPECT_EQ(diags.items()[0].where.file, "bad.yaml");
  EXPECT_GT(diags.items()[0].where.line, 1);
  EXPECT_NE(diags.items()[0].message.find("invalid YAML"), std::string::npos);
}

TEST(Config, ReportsDuplicateKeys) {
  Diagnostics diags;
  load_config_text("a: 1\nb: 2\na: 3\n", "d.yaml", diags);
  ASSERT_EQ(diags.error_count(), 1);
  EXPECT_EQ(format_diagnostic(diags.items()[0]),
            "d.yaml:3: error: duplicate key 'a' (first set at line 1)\n    fix: keep one of the two lines");
}

TEST(Config, TopLevelMustBeAMap) {
  Diagnostics diags;
  EXPECT_FALSE(load_config_text("- a\n- b\n", "l.yaml", diags));
  EXPECT_NE(diags.format().find("l.yaml:1: error: the top level must be a map"), std::string::npos);
  Diagnostics empty_diags;
  auto empty = load_config_text("# nothing\n", "e.yaml", empty_diags);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(Config, MissingFileIsAnError) {
  Diagnostics diags;
  EXPECT_FALSE(load_config_file("/nonexistent/x.yaml", diags));
  EXPECT_EQ(diags.format(), "/nonexistent/x.yaml: error: file not found\n");
}

TEST(Config, SetKeepsOrderAndReplaces) {
  Config c;
  c.set("a", YAML::Node(1), {"f", 1});
  c.set("b", YAML::Node(2), {"f", 2});
  c.set("a", YAML::Node(3), {"g", 9});
  EXPECT_EQ(c.keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.get_int("a"), 3);
  EXPECT_EQ(c.at("a").source.str(), "g:9");
  c.erase("a");
  EXPECT_EQ(c.keys(), std::vector<std::string>{"b"});
}

TEST(Config, ValuesEqualComparesMeaning) {
  auto v = [](const std::string& s) { return YAML::Load(s); };
  EXPECT_TRUE(values_equal(v("8"), v("8.0")));
  EXPECT_TRUE(values_equal(v("True"), v("true")));
  EXPECT_TRUE(values_equal(v("[1, a]"), v("[1.0, a]")));
  EXPECT_TRUE(values_equal(v("{a: 1, b: 2}"), v("{b: 2, a: 1}")));
  EXPECT_TRUE(values_equal(v("~"), v("null")));
  EXPECT_FALSE(values_equal(v("8"), v("\"8\"")));
  EXPECT_FALSE(values_equal(v("256"), v("128")));
  EXPECT_FALSE(values_equal(v("[1]"), v("[1, 2]")));
}

TEST(Config, ParsesCommandLineValues) {
  EXPECT_EQ(value_kind(parse_scalar_text("0.1")), ValueKind::Float);
  EXPECT_EQ(value_kind(parse_scalar_text("true")), ValueKind::Bool);
  EXPECT_EQ(value_kind(parse_scalar_text("[1, 2]")), ValueKind::List);
  EXPECT_EQ(value_kind(parse_scalar_text("a: b: c")), ValueKind::String);
  EXPECT_EQ(parse_scalar_text("a: b: c").Scalar(), "a: b: c");
  EXPECT_EQ(value_kind(string_node("12")), ValueKind::String);
}

TEST(Config, AnnotatedYamlIsGolden) {
  Diagnostics diags;
  Config c = load("name: lenet5\nlr: 0.05\nsizes: [1, 2]\nempty: \"\"\nnested: {a: 1}\n", diags, "_base.yaml");
  c.set("lr", parse_scalar_text("0.1"), {"--set lr=0.1", 0});
  EXPECT_EQ(test::compare_golden("annotated_config.yaml", c.to_annotated_yaml("merged\nsecond line")), "");
  // It is YAML: reading it back gives the same values.
  Diagnostics again;
  auto back = load_config_text(c.to_annotated_yaml("h"), "back.yaml", again);
  ASSERT_TRUE(back);
  for (const auto& key : c.keys()) EXPECT_TRUE(values_equal(c.at(key).value, back->at(key).value)) << key;
}

// The hand-written scanners follow YAML 1.2's core schema, on values of any length (std::regex
// recursed once a character and crashed on 50,000 digits).
TEST(Config, ClassifiesScalarsOfAnyLengthByTheCoreSchema) {
  const auto kind = [](const std::string& text) { return value_kind(parse_scalar_text(text)); };
  for (const char* i : {"0", "-3", "+12", "0x1F", "0o17"}) EXPECT_EQ(kind(i), ValueKind::Int) << i;
  for (const char* f : {"1.", ".5", "1e3", "-1.5E-3", "+.inf", "-.Inf", ".nan", "1e400"})
    EXPECT_EQ(kind(f), ValueKind::Float) << f;
  for (const char* s : {"0x", "0o8", "1e", ".", "1..2", ".e1", "0x1g", "--1", "1 2", "inf", "NaN"})
    EXPECT_EQ(kind(s), ValueKind::String) << s;
  EXPECT_EQ(kind(std::string(200000, '7')), ValueKind::Int);
  EXPECT_EQ(kind("1." + std::string(200000, '0') + "e5"), ValueKind::Float);
  EXPECT_EQ(kind(std::string(200000, '7') + "x"), ValueKind::String);
  EXPECT_EQ(number_of(parse_scalar_text("0x10")), 16.0);
  EXPECT_EQ(number_of(parse_scalar_text("0o17")), 15.0);
  EXPECT_TRUE(std::isinf(number_of(parse_scalar_text("1e400"))));
  EXPECT_TRUE(std::isinf(number_of(parse_scalar_text(std::string(20000, '9')))));
  EXPECT_TRUE(std::isnan(number_of(parse_scalar_text(".NaN"))));
}

// Values quoted in messages: control characters escaped, long ones cut with their length.
TEST(Config, MessagesShowValuesSafely) {
  EXPECT_EQ(quoted_value_text(string_node("a\x1b[2Jb")), "\"a\\x1b[2Jb\"");
  const std::string text = value_text(parse_scalar_text(std::string(50000, '1')));
  EXPECT_LT(text.size(), 200u);
  EXPECT_NE(text.find("(50000 characters)"), std::string::npos) << text;
  // A cut falls between the bytes of a UTF-8 character, never inside one.
  std::string wide = "x";  // the é that follow start at odd bytes
  for (int i = 0; i < 200; ++i) wide += "\xc3\xa9";
  const std::string cut = quoted_value_text(string_node(wide));
  EXPECT_EQ(cut.find("\xc3..."), std::string::npos) << cut;
  EXPECT_EQ(cut.find("...\xa9"), std::string::npos) << cut;
}

TEST(Config, ClosestMatchSuggestsNearNamesOnly) {
  EXPECT_EQ(closest_match("train_bach_size", {"train_batch_size", "eval_batch_size"}), "train_batch_size");
  EXPECT_EQ(closest_match("zzz", {"train_batch_size"}), "");
}

}  // namespace
}  // namespace xpuperf
