// Fine-tuning's pieces: labelled JSON lines read and checked, texts as [CLS] text [SEP] batches,
// BERT's sequence-classification head under Hugging Face's names, and a pretrained BERT
// (BertForMaskedLM, as the bert case saves it) loaded into it with the new parts named.

#include "xpuperf/train/families/text_classification.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "test_util.h"
#include "xpuperf/data/data_error.h"
#include "xpuperf/models/bert_classifier.h"
#include "xpuperf/models/llama_classifier.h"
#include "xpuperf/torchrt/weights.h"

namespace xpuperf::train {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

datasets::TextEncoder encoder(const text::WordPiece& wp) {
  return [&wp](std::string_view text) { return wp.encode(text); };
}

std::string vocab(const test::TempDir& dir) {
  return dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nnetwork\ndriver\nfile\n##s\nsystem\n.\n");
}

TEST(TextClassification, LabelledLinesBecomeBatchesWithLabelsInSortedOrder) {
  test::TempDir dir;
  const auto wp = text::WordPiece::load(vocab(dir));
  const auto train =
      dir.write("train.jsonl",
                "{\"text\": \"The network driver.\", \"label\": \"networking\"}\n\n"
                "{\"text\": \"the file systems the file systems the file\", \"label\": \"filesystems\"}\n"
                "{\"text\": \"drivers\", \"label\": 7}\n");
  const auto valid = dir.write("valid.jsonl", "{\"text\": \"file\", \"label\": \"filesystems\"}\n");
  const auto d = datasets::classification_data(train, valid, encoder(wp), datasets::wordpiece_framing(wp), 6);
  EXPECT_EQ(d.label_names, (std::vector<std::string>{"7", "filesystems", "networking"}));
  ASSERT_EQ(d.train->size(), 3);
  const auto b = d.train->get(torch::arange(3));
  EXPECT_TRUE(torch::equal(b[0][0], torch::tensor({2, 5, 6, 7, 11, 3})));  // [CLS] the network driver . [SEP]
  EXPECT_TRUE(torch::equal(b[0][1], torch::tensor({2, 5, 8, 10, 9, 3})))   // the file system ##s, cut; [SEP] kept
      << b[0][1];
  EXPECT_TRUE(torch::equal(b[0][2], torch::tensor({2, 7, 9, 3, 0, 0})));  // padded
  EXPECT_TRUE(torch::equal(b[2][2], torch::tensor({true, true, true, true, false, false})));
  EXPECT_TRUE(torch::equal(b[3], torch::tensor({2, 1, 0})));
  EXPECT_NE(d.train->description().find("3 labelled texts, 3 labels"), std::string::npos) << d.train->description();
  EXPECT_NE(d.train->description().find("1 texts cut to fit"), std::string::npos) << d.train->description();
}

TEST(TextClassification, BadLinesAndUnknownLabelsAreNamed) {
  test::TempDir dir;
  const auto wp = text::WordPiece::load(vocab(dir));
  const auto good =
      dir.write("good.jsonl", "{\"text\": \"a\", \"label\": \"x\"}\n{\"text\": \"b\", \"label\": \"y\"}\n");
  EXPECT_NE(error_of([&] {
              datasets::read_labelled_jsonl(dir.write("a.jsonl", "{\"text\": \"a\", \"label\": \"x\"}\nnope\n"));
            }).find("a.jsonl: line 2 is not JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              datasets::read_labelled_jsonl(dir.write("b.jsonl", "{\"text\": \"a\", \"label\": [1]}\n"));
            }).find("b.jsonl: line 1 has no \"label\" (a string or an integer)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              datasets::read_labelled_jsonl(dir.path() + "/missing.jsonl");
            }).find("missing.jsonl: cannot be read"),
            std::string::npos);
  const auto other = dir.write("other.jsonl", "{\"text\": \"c\", \"label\": \"z\"}\n");
  EXPECT_NE(error_of([&] {
              datasets::classification_data(good, other, encoder(wp), datasets::wordpiece_framing(wp), 8);
            }).find("other.jsonl: label 'z' (text 1) is not among the training file's labels"),
            std::string::npos);
  const auto one = dir.write("one.jsonl", "{\"text\": \"c\", \"label\": \"x\"}\n");
  EXPECT_NE(error_of([&] {
              datasets::classification_data(one, one, encoder(wp), datasets::wordpiece_framing(wp), 8);
            }).find("one label only ('x')"),
            std::string::npos);
}

models::BertConfig small_bert() {
  models::BertConfig c;
  c.vocab = 40, c.positions = 16, c.layers = 2, c.hidden = 16, c.heads = 2, c.intermediate = 32;
  return c;
}

TEST(TextClassification, APretrainedBertStartsTheClassifierWithItsNewPartsNamed) {
  torch::manual_seed(2);
  auto classifier = models::BertForSequenceClassification(small_bert(), 3);
  std::vector<std::string> names;
  for (const auto& p : classifier->named_parameters()) names.push_back(p.key());
  for (const char* expected : {"bert.embeddings.word_embeddings.weight", "bert.encoder.layer.1.output.dense.weight",
                               "bert.pooler.dense.weight", "classifier.weight", "classifier.bias"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;

  auto pretrained = models::BertForMaskedLM(small_bert());
  test::TempDir dir;
  const std::string archive_path = dir.path() + "/bert.pt";
  {
    torch::serialize::OutputArchive archive;
    pretrained->save(archive);
    archive.save_to(archive_path);
  }
  const auto r = torchrt::load_pretrained(*classifier, archive_path);
  EXPECT_EQ(r.format, "LibTorch archive");
  EXPECT_EQ(r.fresh, (std::vector<std::string>{"bert.pooler.dense.bias", "bert.pooler.dense.weight", "classifier.bias",
                                               "classifier.weight"}));
  EXPECT_EQ(r.loaded.size(), names.size() - 4);
  EXPECT_TRUE(torch::equal(classifier->bert->embeddings->named_parameters()["word_embeddings.weight"],
                           pretrained->bert->embeddings->named_parameters()["word_embeddings.weight"]));

  // A state_dict as Python saves it: the masked-LM head's tensors are named, not taken.
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& p : pretrained->named_parameters()) dict.insert(p.key(), p.value().detach().clone());
  dict.insert("cls.predictions.decoder.weight",
              pretrained->bert->embeddings->named_parameters()["word_embeddings.weight"].detach().clone());
  const auto bytes = torch::pickle_save(c10::IValue(dict));
  const std::string state_path = dir.write("state.bin", std::string(bytes.begin(), bytes.end()));
  const auto s = torchrt::load_pretrained(
      *classifier, state_path, {{"cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"}});
  EXPECT_EQ(s.format, "PyTorch state_dict");
  EXPECT_EQ(s.loaded.size(), names.size() - 4);
  EXPECT_FALSE(s.unused.empty());
  EXPECT_TRUE(
      std::all_of(s.unused.begin(), s.unused.end(), [](const std::string& n) { return n.rfind("cls.", 0) == 0; }));

  auto wider = small_bert();
  wider.hidden = 32;
  auto mismatched = models::BertForSequenceClassification(wider, 3);
  EXPECT_NE(error_of([&] { torchrt::load_pretrained(*mismatched, archive_path); }).find("does not fit the model"),
            std::string::npos);

  const auto [loss, correct] =
      classifier->loss_and_correct(torch::randint(0, 40, {4, 8}), torch::zeros({4, 8}, torch::kLong),
                                   torch::ones({4, 8}, torch::kBool), torch::tensor({0, 1, 2, 1}));
  EXPECT_NEAR(loss.item<double>(), std::log(3.0), 0.5);
  EXPECT_LE(correct.item<std::int64_t>(), 4);
}

// Llama scores each row's last real token: a row padded on the right gets the logits it gets alone
// (the decoder is causal), and a LlamaForCausalLM checkpoint starts every tensor but `score`.
TEST(TextClassification, LlamaScoresTheLastRealTokenAndStartsFromACausalLm) {
  torch::manual_seed(4);
  models::LlamaConfig c;
  c.vocab = 50, c.hidden = 32, c.intermediate = 48, c.layers = 2, c.heads = 4, c.kv_heads = 2;
  auto m = models::LlamaForSequenceClassification(c, 3);
  m->eval();
  const auto ids = torch::randint(0, 50, {2, 7});
  const auto keep = torch::tensor({1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, torch::kBool).view({2, 7});
  const auto logits = m->forward(ids, keep);
  ASSERT_EQ(logits.sizes(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_TRUE(torch::allclose(
      logits[0], m->forward(ids.slice(0, 0, 1).narrow(1, 0, 4), keep.slice(0, 0, 1).narrow(1, 0, 4))[0], 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(logits[1], m->forward(ids.slice(0, 1, 2), keep.slice(0, 1, 2))[0], 1e-5, 1e-6));

  auto causal = models::LlamaForCausalLM(c);
  test::TempDir dir;
  {
    torch::serialize::OutputArchive archive;
    causal->save(archive);
    archive.save_to(dir.path() + "/llama.pt");
  }
  const auto r = torchrt::load_pretrained(*m, dir.path() + "/llama.pt");
  EXPECT_EQ(r.fresh, std::vector<std::string>{"score.weight"});
  EXPECT_TRUE(torch::equal(m->model->norm->weight, causal->model->norm->weight));
}

}  // namespace
}  // namespace xpuperf::train
