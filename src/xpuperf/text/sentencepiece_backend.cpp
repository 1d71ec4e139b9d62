// libsentencepiece behind text/sentencepiece.h, registered at start. Linked only into the
// torch-free binary and tests (sentencepiece.h says why).

#include <sentencepiece_processor.h>

#include "xpuperf/text/sentencepiece.h"
#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::text {
namespace {

class Processor : public SentencePieceModel {
 public:
  explicit Processor(const std::string& path) {
    const auto status = processor_.Load(path);
    if (!status.ok())
      throw TokenizerError(path + ": not a SentencePiece model (" + status.ToString() +
                           "); give the .model file spm_train writes (CPM's chinese_vocab.model, for one)");
  }
  void encode_line(std::string_view line, std::vector<std::int32_t>& out) const override {
    std::vector<int> ids;
    const auto status = processor_.Encode(line, &ids);
    if (!status.ok()) throw TokenizerError("SentencePiece could not encode a line: " + status.ToString());
    out.insert(out.end(), ids.begin(), ids.end());
  }
  std::int32_t vocab_size() const override { return processor_.GetPieceSize(); }
  std::int32_t end_of_text() const override { return processor_.eos_id(); }

 private:
  sentencepiece::SentencePieceProcessor processor_;
};

std::unique_ptr<SentencePieceModel> load_processor(const std::string& path) {
  return std::make_unique<Processor>(path);
}

const bool registered = register_sentencepiece_loader(load_processor);

}  // namespace
}  // namespace xpuperf::text
