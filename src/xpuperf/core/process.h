#pragma once
// Starts programs from an argument vector (never through a shell), streams their output to a
// file and optionally to the console, waits with a time limit and stops whole process groups.
// Launchers build on this.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace xpuperf {

class ProcessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProcessSpec {
  std::vector<std::string> argv;           // argv[0] is looked up on PATH when it has no '/'
  std::map<std::string, std::string> env;  // set on top of the inherited environment
  std::vector<std::string> unset_env;      // removed from the inherited environment
  bool inherit_env = true;
  std::string cwd;          // empty: the caller's
  std::string log_path;     // stdout+stderr go here (appended); empty: none
  bool echo = false;        // also copy each output line to our stdout
  std::string echo_prefix;  // put before each echoed line, e.g. "[rank0] "
};

struct ExitStatus {
  enum class Kind { Exited, Signaled };
  Kind kind = Kind::Exited;
  int code = 0;            // exit code, when Exited
  int signal = 0;          // signal number, when Signaled
  bool timed_out = false;  // stopped by us because the time limit passed
  bool stopped = false;    // stopped by us (time limit or stop())

  bool ok() const { return kind == Kind::Exited && code == 0 && !timed_out; }
  std::string describe() const;  // "exited with code 3", "killed by signal 9 (Killed)", ...
};

class Process {
 public:
  using Duration = std::chrono::duration<double>;

  // Starts the program in a process group of its own. Throws ProcessError when it cannot be
  // started (no such program, not executable, bad working folder), with the reason.
  static std::unique_ptr<Process> start(const ProcessSpec& spec);
  ~Process();  // stops the group if it still runs
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool running();

  // Waits for the program to end. With a limit, a program still running when it passes is
  // stopped (TERM to its group, KILL after `grace`) and the status says timed_out. After the
  // program ends, the rest of its group is stopped too so that no child outlives the round.
  ExitStatus wait(std::optional<Duration> limit = std::nullopt, Duration grace = std::chrono::seconds(5));
  // TERM to the whole group, then KILL after `grace`; returns how the program ended.
  ExitStatus stop(Duration grace = std::chrono::seconds(5));

 private:
  struct Output;
  Process() = default;
  bool reap(bool block);
  void signal_group(int sig);
  ExitStatus finish();

  pid_t pid_ = -1;
  int raw_status_ = 0;
  bool reaped_ = false;
  bool timed_out_ = false;
  bool stopped_ = false;
  std::unique_ptr<Output> output_;
};

// How a group of processes (the ranks of a node) ended under wait_all.
struct GroupOutcome {
  enum class End { AllExited, OneFailed, TimedOut, Stopped };
  End end = End::AllExited;
  int failed = -1;                   // index of the first process that failed (OneFailed)
  std::vector<ExitStatus> statuses;  // one per process, those stopped by us included
};

// Waits for every process; the first one that fails, the time limit (none when unset) or a
// non-zero `stop` ends the wait, and the ones still running are then stopped (TERM, KILL
// after `grace`). After a failure the others first get up to `settle` to end by themselves:
// ranks that read the same bad input fail together, and the one that reports it (or writes
// the results) may be a moment behind the one that failed first.
GroupOutcome wait_all(std::vector<std::unique_ptr<Process>>& processes, std::optional<Process::Duration> limit,
                      const std::atomic<int>* stop, Process::Duration grace = std::chrono::seconds(5),
                      Process::Duration settle = Process::Duration::zero());

// How long a launcher lets the other ranks go on after one has failed (wait_all's `settle`).
inline constexpr Process::Duration kRankSettle = std::chrono::seconds(5);

// Runs a program to the end and returns its status (a convenience for short commands).
ExitStatus run_process(const ProcessSpec& spec, std::optional<Process::Duration> limit = std::nullopt);

// A TCP port on loopback that no one listens on now, chosen by the system (bind to port 0): the
// rendezvous port of a round on this machine, so that two runs or tests side by side never meet.
int free_local_port();

// xpuperf-torch beside this binary (cli/torch_entry.h): what runs the LibTorch work, and what a
// container mounts beside xpuperf; "" when there is none (a build without LibTorch).
std::string torch_binary();

}  // namespace xpuperf
