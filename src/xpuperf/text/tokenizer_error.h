#pragma once

#include <stdexcept>

namespace xpuperf::text {

// A vocabulary, text or token file a user gave that cannot be used; the message names the file.
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace xpuperf::text
