#include "xpuperf/core/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

extern char** environ;

namespace xpuperf {

namespace {

std::mutex& console_mutex() {
  static std::mutex m;
  return m;
}

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // a full disk must not stop the program being run; the caller sees a short log
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

std::vector<std::string> build_env(const ProcessSpec& spec) {
  std::map<std::string, std::string> vars;
  if (spec.inherit_env) {
    for (char** e = environ; e && *e; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (eq) vars[std::string(*e, static_cast<std::size_t>(eq - *e))] = eq + 1;
    }
  }
  for (const auto& name : spec.unset_env) vars.erase(name);
  for (const auto& [name, value] : spec.env) vars[name] = value;
  std::vector<std::string> out;
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> out;
  for (auto& s : items) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Whether any member of process group `pgid` is still running. Members that ended but were
// orphaned stay zombies until their new parent reaps them (in a container that may be never),
// so they do not count.
bool group_alive(pid_t pgid) {
  if (::kill(-pgid, 0) != 0) return false;
  DIR* proc = ::opendir("/proc");
  if (!proc) return true;
  bool alive = false;
  while (dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    char path[300];
    std::snprintf(path, sizeof path, "/proc/%s/stat", entry->d_name);
    FILE* f = std::fopen(path, "r");
    if (!f) continue;
    char buffer[512];
    const std::size_t n = std::fread(buffer, 1, sizeof buffer - 1, f);
    std::fclose(f);
    buffer[n] = '\0';
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so parse after the last ')'.
    const char* close = std::strrchr(buffer, ')');
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (close && std::sscanf(close + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == pgid && state != 'Z') {
      alive = true;
      break;
    }
  }
  ::closedir(proc);
  return alive;
}

// Child side: report why the start failed to the parent, then exit.
[[noreturn]] void child_fail(int error_fd, const char* stage) {
  const int err = errno;
  char message[256];
  const int n = std::snprintf(message, sizeof message, "%s: %s", stage, std::strerror(err));
  if (n > 0) write_all(error_fd, message, static_cast<std::size_t>(n));
  _exit(127);
}

}  // namespace

// Copies the program's output to the log file and the console, on a thread of its own.
struct Process::Output {
  int pipe_fd = -1;
  int log_fd = -1;
  bool echo = false;
  std::string prefix;
  std::string partial;  // an echoed line not yet ended
  std::atomic<bool> abandon{false};
  std::atomic<bool> done{false};
  std::thread thread;

  void run() {
    char buffer[65536];
    while (true) {
      pollfd p{pipe_fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, 50);
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) {
        if (abandon) break;
        continue;
      }
      const ssize_t n = ::read(pipe_fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (log_fd >= 0) write_all(log_fd, buffer, static_cast<std::size_t>(n));
      if (echo) echo_lines(buffer, static_cast<std::size_t>(n));
    }
    if (echo && !partial.empty()) echo_lines("\n", 1);
    done = true;
  }

  void echo_lines(const char* data, std::size_t size) {
    partial.append(data, size);
    std::string::size_type start = 0, end;
    std::string out;
    while ((end = partial.find('\n', start)) != std::string::npos) {
      out += prefix;
      out.append(partial, start, end - start + 1);
      start = end + 1;
    }
    partial.erase(0, start);
    if (!out.empty()) {
      std::lock_guard<std::mutex> lock(console_mutex());
      std::cout << out << std::flush;
    }
  }

  ~Output() {
    if (thread.joinable()) {
      abandon = true;
      thread.join();
    }
    if (pipe_fd >= 0) ::close(pipe_fd);
    if (log_fd >= 0) ::close(log_fd);
  }
};

std::string ExitStatus::describe() const {
  std::string text;
  if (kind == Kind::Exited) {
    text = "exited with code " + std::to_string(code);
  } else {
    const char* name = ::strsignal(signal);
    text = "killed by signal " + std::to_string(signal) + (name ? std::string(" (") + name + ")" : "");
  }
  if (timed_out)
    text += " after its time limit";
  else if (stopped)
    text += " (stopped)";
  return text;
}

std::unique_ptr<Process> Process::start(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) throw ProcessError("no program to run");

  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env = build_env(spec);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);

  int log_fd = -1;
  if (!spec.log_path.empty()) {
    log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw ProcessError("cannot open log file " + spec.log_path + ": " + std::strerror(errno));
  }
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    if (log_fd >= 0) ::close(log_fd);
    throw ProcessError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], log_fd})
      if (fd >= 0) ::close(fd);
    throw ProcessError(std::string("cannot start a process: ") + std::strerror(err));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd < 0 || ::dup2(null_fd, 0) < 0) child_fail(err_pipe[1], "cannot open /dev/null");
    if (::dup2(out_pipe[1], 1) < 0 || ::dup2(out_pipe[1], 2) < 0) child_fail(err_pipe[1], "cannot redirect output");
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) child_fail(err_pipe[1], "cannot enter working folder");
    ::execvpe(c_args[0], c_args.data(), c_env.data());
    child_fail(err_pipe[1], "cannot execute");
  }

  ::setpgid(pid, pid);  // also here, so the group exists before we might signal it
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  std::unique_ptr<Process> process(new Process());
  process->pid_ = pid;
  process->output_ = std::make_unique<Output>();
  process->output_->pipe_fd = out_pipe[0];
  process->output_->log_fd = log_fd;
  process->output_->echo = spec.echo;
  process->output_->prefix = spec.echo_prefix;

  // The error pipe closes on a successful exec and carries the reason on a failed one.
  char reason[256];
  ssize_t n;
  do {
    n = ::read(err_pipe[0], reason, sizeof reason - 1);
  } while (n < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  if (n > 0) {
    reason[n] = '\0';
    process->reap(true);
    std::string what = std::string(reason) + " (program '" + spec.argv[0] + "'";
    if (!spec.cwd.empty()) what += ", working folder '" + spec.cwd + "'";
    throw ProcessError(what + ")");
  }
  Output* output = process->output_.get();
  output->thread = std::thread([output] { output->run(); });
  return process;
}

Process::~Process() {
  if (!reaped_ && pid_ > 0) stop(std::chrono::seconds(2));
}

bool Process::reap(bool block) {
  if (reaped_) return true;
  while (true) {
    const pid_t r = ::waitpid(pid_, &raw_status_, block ? 0 : WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return true;
    }
    if (r == 0) return false;
    if (errno == EINTR) continue;
    // ECHILD: someone else reaped it; nothing more can be learnt.
    reaped_ = true;
    raw_status_ = 0;
    return true;
  }
}

bool Process::running() {
  return !reap(false);
}

void Process::signal_group(int sig) {
  if (pid_ > 0) ::kill(-pid_, sig);
}

ExitStatus Process::finish() {
  // Children of the program may still hold its output open: stop what is left of its group.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  if (group_alive(pid_)) {
    signal_group(SIGTERM);
    while (group_alive(pid_) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (group_alive(pid_)) signal_group(SIGKILL);
  }
  if (output_ && output_->thread.joinable()) {
    // Wait for the last output; a descendant that left the group may keep the pipe open, so
    // give up after a short while rather than hang.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!output_->done && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    output_->abandon = true;
    output_->thread.join();
  }
  ExitStatus status;
  if (WIFSIGNALED(raw_status_)) {
    status.kind = ExitStatus::Kind::Signaled;
    status.signal = WTERMSIG(raw_status_);
  } else {
    status.code = WIFEXITED(raw_status_) ? WEXITSTATUS(raw_status_) : 0;
  }
  status.timed_out = timed_out_;
  status.stopped = stopped_;
  return status;
}

ExitStatus Process::stop(Duration grace) {
  if (!reaped_ && !reap(false)) {
    stopped_ = true;
    signal_group(SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (!reap(false) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!reaped_) {
      signal_group(SIGKILL);
      reap(true);
    }
  }
  return finish();
}

ExitStatus Process::wait(std::optional<Duration> limit, Duration grace) {
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::milliseconds(1);
  while (!reap(false)) {
    if (limit && std::chrono::steady_clock::now() - start >= *limit) {
      timed_out_ = true;
      return stop(grace);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  return finish();
}

GroupOutcome wait_all(std::vector<std::unique_ptr<Process>>& processes, std::optional<Process::Duration> limit,
                      const std::atomic<int>* stop, Process::Duration grace, Process::Duration settle) {
  GroupOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> failed_at;
  std::vector<std::optional<ExitStatus>> ended(processes.size());
  while (true) {
    bool all_done = true;
    for (std::size_t i = 0; i < processes.size(); ++i) {
      if (ended[i]) continue;
      if (processes[i]->running()) {
        all_done = false;
        continue;
      }
      ended[i] = processes[i]->wait();
      if (!ended[i]->ok() && outcome.failed < 0) {
        outcome.failed = static_cast<int>(i);
        outcome.end = GroupOutcome::End::OneFailed;
      }
    }
    if (all_done) break;
    if (outcome.failed >= 0) {
      if (!failed_at) failed_at = std::chrono::steady_clock::now();
      if (std::chrono::steady_clock::now() - *failed_at >= settle) break;
    }
    // A stop or the time limit while the others settle ends the wait, the failure staying its cause.
    if (stop && *stop != 0) {
      if (outcome.failed < 0) outcome.end = GroupOutcome::End::Stopped;
      break;
    }
    if (limit && std::chrono::steady_clock::now() - start > *limit) {
      if (outcome.failed < 0) outcome.end = GroupOutcome::End::TimedOut;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (!ended[i]) ended[i] = processes[i]->stop(grace);
    outcome.statuses.push_back(*ended[i]);
  }
  return outcome;
}

ExitStatus run_process(const ProcessSpec& spec, std::optional<Process::Duration> limit) {
  return Process::start(spec)->wait(limit);
}

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw ProcessError(std::string("cannot open a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) throw ProcessError(std::string("cannot find a free port on loopback: ") + std::strerror(saved));
  return ntohs(addr.sin_port);
}

std::string torch_binary() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path torch = self.parent_path() / "xpuperf-torch";
  if (!std::filesystem::is_regular_file(torch, ec) || ::access(torch.c_str(), X_OK) != 0) return "";
  return torch.string();
}

}  // namespace xpuperf
