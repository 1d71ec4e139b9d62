#pragma once
// The data layer's error: a file or folder that is missing, unreadable or not in the format a
// reader expects. Its message names the path and what to do.

#include <stdexcept>

namespace xpuperf::data {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace xpuperf::data
