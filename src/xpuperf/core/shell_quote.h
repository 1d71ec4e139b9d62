#pragma once
// Quoting for the one place a command line must pass through a shell: the remote side of ssh,
// which joins its arguments with spaces and hands them to the user's shell.

#include <string>
#include <vector>

namespace xpuperf {

// 'text' with every ' written as '\'' : the shell reads it back as exactly `text`.
std::string shell_quote(const std::string& text);
// Each argument quoted, joined with spaces.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace xpuperf
