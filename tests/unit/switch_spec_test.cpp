// The training switches' declarations (core/switch_spec.h) against what they claim: the
// compatibility matrix against what the checks refuse, the docs' table against the declarations,
// the value checks and the sweep's tokens.

#include "xpuperf/core/switch_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"
#include "xpuperf/core/config.h"
#include "xpuperf/core/training_switches.h"

namespace xpuperf {
namespace {

// The messages `check_training_switches` gives a config of `lines` on `world_size` ranks.
std::set<std::string> refusals(const std::string& lines, int world_size) {
  Diagnostics diags;
  // Adam and one sample a rank: the optimizer- and batch-bound checks hold without a switch.
  const auto cfg =
      load_config_text("optimizer: adamw\ntrain_batch_size: 1\nlora_targets: [c_attn]\n" + lines, "matrix.yaml", diags);
  EXPECT_TRUE(cfg) << lines;
  if (!cfg) return {};
  check_training_switches(*cfg, world_size, diags);
  std::set<std::string> out;
  for (const auto& d : diags.items()) out.insert(d.message);
  return out;
}

// Ranks a set of switches needs: the product of the parallel sizes it turns on.
int ranks_for(const std::vector<const SwitchSpec*>& on) {
  int ranks = 1;
  for (const auto* s : on)
    if (s->key == "tensor_parallel" || s->key == "pipeline_parallel" || s->key == "expert_parallel")
      ranks *= std::stoi(switch_on_value(*s));
  return ranks;
}

std::string lines_for(const std::vector<const SwitchSpec*>& on) {
  std::string lines;
  for (const auto* s : on) lines += s->key + ": " + switch_on_value(*s) + "\n";
  return lines;
}

// Two switches are refused together when both on give a message neither gives alone (each on the
// ranks it needs itself).
bool refused_together(const SwitchSpec& a, const SwitchSpec& b) {
  const auto alone_a = refusals(lines_for({&a}), ranks_for({&a}));
  const auto alone_b = refusals(lines_for({&b}), ranks_for({&b}));
  for (const auto& message : refusals(lines_for({&a, &b}), ranks_for({&a, &b})))
    if (!alone_a.count(message) && !alone_b.count(message)) return true;
  return false;
}

bool listed_together(const SwitchSpec& a, const SwitchSpec& b) {
  const auto lists = [](const SwitchSpec& s, const std::string& key) {
    return std::find(s.not_yet_with.begin(), s.not_yet_with.end(), key) != s.not_yet_with.end();
  };
  return lists(a, b.key) || lists(b, a.key);
}

TEST(SwitchSpecs, TheMatrixIsExactlyWhatTheChecksRefuse) {
  const auto& all = switch_specs();
  ASSERT_GE(all.size(), 15u);
  std::string wrong;
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = i + 1; j < all.size(); ++j) {
      const bool refused = refused_together(all[i], all[j]), listed = listed_together(all[i], all[j]);
      if (refused != listed)
        wrong += "  " + all[i].key + " + " + all[j].key + ": " +
                 (refused ? "refused but not listed" : "listed but combines") + "\n";
    }
  EXPECT_TRUE(wrong.empty()) << "the declarations' not_yet_with lists and the checks disagree:\n" << wrong;
}

TEST(SwitchSpecs, EachIsDeclaredBesideItsStrategyWithADefaultItsValuesTake) {
  for (const auto& spec : switch_specs()) {
    EXPECT_NE(spec.declared.file.find("src/xpuperf/"), std::string::npos) << spec.key;
    EXPECT_GT(spec.declared.line, 0) << spec.key;
    EXPECT_FALSE(spec.doc.empty()) << spec.key;
    Diagnostics diags;
    const auto cfg = load_config_text(spec.key + ": " + spec.default_value + "\n", "default.yaml", diags);
    ASSERT_TRUE(cfg) << spec.key;
    check_switch_values(*cfg, diags);
    EXPECT_FALSE(diags.has_errors()) << spec.key << "'s default " << spec.default_value;
    const auto on = load_config_text(spec.key + ": " + switch_on_value(spec) + "\n", "on.yaml", diags);
    ASSERT_TRUE(on);
    EXPECT_TRUE(switch_is_on(spec, on->at(spec.key).value)) << spec.key;
    EXPECT_FALSE(switch_is_on(spec, cfg->at(spec.key).value)) << spec.key;
  }
}

TEST(SwitchSpecs, ValuesOutsideTheDeclarationAreRefusedAtTheirLine) {
  EXPECT_EQ(refusals("zero_stage: 4\n", 1), std::set<std::string>{"'zero_stage' must be 0, 1, 2 or 3, got 4"});
  EXPECT_EQ(refusals("tensor_parallel: 0\n", 1), std::set<std::string>{"'tensor_parallel' must be 1 or more, got 0"});
  EXPECT_EQ(refusals("precision: fp8\n", 1),
            std::set<std::string>{"'precision' must be fp32, tf32, bf16 or fp16, got 'fp8'"});
  EXPECT_EQ(refusals("cuda_graphs: 3\n", 1), std::set<std::string>{"'cuda_graphs' must be true or false, got 3"});
  Diagnostics diags;
  const auto cfg = load_config_text("a: 1\nprecision: bf61\n", "typo.yaml", diags);
  ASSERT_TRUE(cfg);
  check_switch_values(*cfg, diags);
  ASSERT_EQ(diags.items().size(), 1u);
  EXPECT_EQ(diags.items()[0].where.str(), "typo.yaml:2");
  EXPECT_EQ(diags.items()[0].hint, "did you mean 'bf16'?");
}

TEST(SwitchSpecs, SweepTokensComeFromTheDeclarations) {
  Diagnostics diags;
  const Source where{"--strategies", 0};
  EXPECT_EQ(switch_token_sets("zero2", where, diags), (std::vector<std::string>{"zero_stage=2"}));
  EXPECT_EQ(switch_token_sets("ckpt", where, diags), (std::vector<std::string>{"activation_checkpointing=true"}));
  EXPECT_EQ(switch_token_sets("bf16", where, diags), (std::vector<std::string>{"precision=bf16"}));
  EXPECT_EQ(switch_token_sets("foreach", where, diags), (std::vector<std::string>{"fused_optimizer=foreach"}));
  EXPECT_EQ(switch_token_sets("tp4", where, diags), (std::vector<std::string>{"tensor_parallel=4"}));
  EXPECT_EQ(switch_token_sets("moe8", where, diags), (std::vector<std::string>{"num_local_experts=8"}));
  EXPECT_FALSE(diags.has_errors());
  EXPECT_FALSE(switch_token_sets("fast", where, diags));
  EXPECT_FALSE(switch_token_sets("zerox", where, diags));
  EXPECT_FALSE(diags.has_errors());  // not a switch's token: the caller says so
  EXPECT_FALSE(switch_token_sets("moe1", where, diags));
  ASSERT_EQ(diags.items().size(), 1u);
  EXPECT_EQ(diags.items()[0].message, "'moe1': num_local_experts must be 2 or more");
  for (const char* token : {"zeroN", "tpN", "ckpt", "graphs", "offload", "pack", "fp16"})
    EXPECT_NE(switch_tokens_text().find(token), std::string::npos) << token;
}

// docs/TRAINING.md's table is `xpuperf config --switches --markdown`, between its markers.
TEST(SwitchSpecs, TheTrainingDocsTableIsTheDeclarations) {
  const std::string doc = test::read_file(std::string(XPUPERF_SOURCE_DIR) + "/docs/TRAINING.md");
  const std::string begin = "<!-- switch table: xpuperf config --switches --markdown -->\n";
  const std::string end = "<!-- end of switch table -->";
  const auto from = doc.find(begin), to = doc.find(end);
  ASSERT_NE(from, std::string::npos) << "docs/TRAINING.md has no switch table";
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(doc.substr(from + begin.size(), to - from - begin.size()), switch_table_markdown())
      << "docs/TRAINING.md's switch table differs from the declarations: paste `xpuperf config --switches "
         "--markdown` between its markers";
}

// A case's `switches:` list stands for the declared defaults, each attributed to its declaration.
TEST(SwitchSpecs, ACaseListsItsSwitchesAndTakesTheDeclaredDefaults) {
  Diagnostics diags;
  auto base =
      load_config_text("lr: 0.1\nprecision: bf16\nswitches: [zero_stage,\n  cuda_graphs]\n", "_base.yaml", diags);
  ASSERT_TRUE(base);
  add_switch_defaults(*base, diags);
  EXPECT_FALSE(diags.has_errors()) << diags.format();
  EXPECT_FALSE(base->has("switches"));
  EXPECT_EQ(base->get_string("precision"), "bf16");
  EXPECT_EQ(base->at("precision").source.str(), "_base.yaml:2");
  ASSERT_TRUE(base->has("zero_stage"));
  EXPECT_EQ(base->get_int("zero_stage"), 0);
  EXPECT_FALSE(base->get_bool("cuda_graphs"));
  EXPECT_EQ(base->at("zero_stage").source.str(), find_switch_spec("zero_stage")->declared.str());
  EXPECT_NE(base->at("cuda_graphs").source.str().find("src/xpuperf/"), std::string::npos);
  EXPECT_FALSE(base->has("tensor_parallel")) << "a switch the case does not list is not its parameter";
}

TEST(SwitchSpecs, AnUnknownOrTwiceNamedSwitchIsAnErrorAtItsLine) {
  Diagnostics diags;
  auto base = load_config_text("zero_stage: 1\nswitches:\n  - zero_stage\n  - cuda_graph\n", "_base.yaml", diags);
  ASSERT_TRUE(base);
  add_switch_defaults(*base, diags);
  ASSERT_EQ(diags.error_count(), 2) << diags.format();
  EXPECT_EQ(diags.items()[0].where.str(), "_base.yaml:3");
  EXPECT_EQ(diags.items()[0].message, "'zero_stage' is both listed under 'switches' and set at _base.yaml:1");
  EXPECT_EQ(diags.items()[1].where.str(), "_base.yaml:4");
  EXPECT_EQ(diags.items()[1].message, "'cuda_graph' under 'switches' is not a training switch");
  EXPECT_NE(diags.items()[1].hint.find("did you mean 'cuda_graphs'?"), std::string::npos);
  EXPECT_EQ(base->get_int("zero_stage"), 1);

  Diagnostics not_a_list;
  auto scalar = load_config_text("switches: zero_stage\n", "_base.yaml", not_a_list);
  ASSERT_TRUE(scalar);
  add_switch_defaults(*scalar, not_a_list);
  EXPECT_TRUE(not_a_list.has_errors());
}

// Defaults live once, in the declarations: no case's _base.yaml repeats one.
TEST(SwitchSpecs, NoCaseRepeatsADeclaredDefault) {
  namespace fs = std::filesystem;
  int cases = 0;
  for (const auto& dir : fs::directory_iterator(std::string(XPUPERF_SOURCE_DIR) + "/cases/training")) {
    const fs::path file = dir.path() / "libtorch" / "config" / "_base.yaml";
    if (!fs::exists(file)) continue;
    ++cases;
    Diagnostics diags;
    const auto base = load_config_file(file.string(), diags);
    ASSERT_TRUE(base) << diags.format();
    for (const auto& spec : switch_specs()) {
      const ConfigEntry* e = base->find(spec.key);
      if (e)
        EXPECT_TRUE(switch_is_on(spec, e->value))
            << e->source.str() << ": " << spec.key << " repeats its declared default (" << spec.default_value << ", "
            << spec.declared.str() << "): list it under 'switches' instead";
    }
  }
  EXPECT_GE(cases, 10);
}

}  // namespace
}  // namespace xpuperf
