#include "xpuperf/core/crash_report.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <ucontext.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstring>

namespace xpuperf {

namespace {

void write_text(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void write_hex(std::uintptr_t value) {
  char digits[19] = "0x";
  for (int i = 0; i < 16; ++i) digits[2 + i] = "0123456789abcdef"[(value >> (60 - 4 * i)) & 0xf];
  digits[18] = '\0';
  write_text(digits);
}

// "ADDRESS (FILE+OFFSET)": what addr2line -e FILE OFFSET turns into a function and line.
void write_address(const char* what, std::uintptr_t address) {
  write_text(what);
  write_hex(address);
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(address), &info) && info.dli_fname) {
    write_text(" (");
    write_text(info.dli_fname);
    write_text("+");
    write_hex(address - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
    write_text(")");
  }
  write_text("\n");
}

// Async-signal-safe calls only, but for dladdr, which reads loaded modules' tables: the heap may
// be what broke.
void on_crash(int signal, siginfo_t* info, void* context) {
  write_text("xpuperf: crashed: ");
  write_text(strsignal(signal));
  write_text("\n");
  write_address("  fault address ", reinterpret_cast<std::uintptr_t>(info->si_addr));
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  const auto pc = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  const auto sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  write_address("  instruction   ", pc);
  // Where a call through a bad pointer came from: the return address it pushed.
  write_address("  return to     ", *reinterpret_cast<const std::uintptr_t*>(sp));
#else
  (void)context;
#endif
  write_text("  call stack (innermost first):\n");
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

void install_crash_report() {
  // backtrace() loads libgcc on its first call, which is not safe inside a handler: call it now.
  void* frame[1];
  ::backtrace(frame, 1);
  // A stack of its own, so a stack overflow is reported too.
  static char stack[64 * 1024];
  stack_t alt{};
  alt.ss_sp = stack;
  alt.ss_size = sizeof stack;
  ::sigaltstack(&alt, nullptr);
  struct sigaction action {};
  action.sa_sigaction = on_crash;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) ::sigaction(s, &action, nullptr);
}

}  // namespace xpuperf
