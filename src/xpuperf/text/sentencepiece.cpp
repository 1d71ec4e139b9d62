#include "xpuperf/text/sentencepiece.h"

#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::text {
namespace {
SentencePieceLoader& loader() {
  static SentencePieceLoader l = nullptr;  // function-local: registrars run in any order
  return l;
}
}  // namespace

bool register_sentencepiece_loader(SentencePieceLoader l) {
  loader() = l;
  return true;
}

bool SentencePiece::available() {
  return loader() != nullptr;
}

SentencePiece SentencePiece::load(const std::string& path) {
  if (!loader())
    throw TokenizerError(path +
                         ": this binary has no SentencePiece (`xpuperf data tokenize` has it where the build "
                         "found libsentencepiece-dev: apt-get install libsentencepiece-dev, then build again)");
  return SentencePiece(loader()(path));
}

std::vector<std::int32_t> SentencePiece::encode(std::string_view text) const {
  std::vector<std::int32_t> out;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) model_->encode_line(text.substr(start, end - start), out);
    start = end + 1;
  }
  return out;
}

}  // namespace xpuperf::text
