#pragma once
// A SentencePiece model (a user's .model file, e.g. CPM's chinese_vocab.model) through Debian's
// libsentencepiece, as spm_encode runs it: each line of text is one sentence, encoded on its own,
// so the ids are spm_encode's line for line. Torch-free.
//
// The library itself is linked only into the torch-free `xpuperf` binary (and the unit tests), by
// sentencepiece_backend.cpp, which registers a loader here: Debian's libsentencepiece carries its
// own protobuf-lite, and loaded beside LibTorch's ONNX protobuf in xpuperf-torch it crashes at start.
// `data tokenize` runs in `xpuperf`; elsewhere load() says the binary has no SentencePiece.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace xpuperf::text {

// What a loaded model does; the backend implements it.
class SentencePieceModel {
 public:
  virtual ~SentencePieceModel() = default;
  virtual void encode_line(std::string_view line, std::vector<std::int32_t>& out) const = 0;
  virtual std::int32_t vocab_size() const = 0;
  virtual std::int32_t end_of_text() const = 0;  // </s> (eos_id), -1 where the model has none
};
// Loads a model, or throws TokenizerError naming the file.
using SentencePieceLoader = std::unique_ptr<SentencePieceModel> (*)(const std::string& path);
bool register_sentencepiece_loader(SentencePieceLoader loader);

class SentencePiece {
 public:
  // Throws TokenizerError naming the file and what is wrong (or that this binary has none).
  static SentencePiece load(const std::string& model);
  static bool available();  // a backend is linked into this binary

  // The ids of every line of `text`, one line after another (a line break is not a token).
  std::vector<std::int32_t> encode(std::string_view text) const;
  std::int32_t vocab_size() const { return model_->vocab_size(); }
  std::int32_t end_of_text() const { return model_->end_of_text(); }

 private:
  explicit SentencePiece(std::shared_ptr<const SentencePieceModel> model) : model_(std::move(model)) {}
  std::shared_ptr<const SentencePieceModel> model_;
};

}  // namespace xpuperf::text
