// The ssh launcher: a node agent on every host through the OpenSSH client. Batch mode (never a
// prompt), host keys verified (never StrictHostKeyChecking=no), one ControlMaster connection a
// host, and every argument that reaches the remote shell quoted.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>

#include "xpuperf/core/files.h"
#include "xpuperf/core/shell_quote.h"
#include "xpuperf/launch/launcher.h"

namespace xpuperf {
namespace fs = std::filesystem;

namespace {

std::string expand_home(const std::string& path) {
  if (path.rfind("~/", 0) != 0) return path;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + path.substr(1);
}

class SshLauncher : public Launcher {
 public:
  SshLauncher() {
    std::string pattern = (fs::temp_directory_path() / "xpuperf-ssh-XXXXXX").string();
    if (::mkdtemp(pattern.data())) control_dir_ = pattern;
  }
  ~SshLauncher() override {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(control_dir_, ec)) {
      // Close the master connections ("ssh -O exit" needs the host; the socket alone is enough
      // to ask the master to go).
      ProcessSpec spec;
      spec.argv = {"ssh", "-o", "ControlPath=" + entry.path().string(), "-O", "exit", "unused"};
      try {
        run_process(spec, std::chrono::seconds(5));
      } catch (const ProcessError&) {
      }
    }
    remove_tree(control_dir_);  // core/files.h: why not std::filesystem::remove_all
  }

  std::string name() const override { return "ssh"; }

  void check(const Plan& plan, const Deployment& deployment, Diagnostics& diags) override {
    const Source where = plan.raw.has("hosts") ? plan.raw.at("hosts").source : Source{plan.file, 0};
    // Every host at once: a cluster's health check takes as long as its slowest host.
    std::vector<std::future<std::string>> answers;
    for (const auto& host : plan.hosts) {
      answers.push_back(std::async(std::launch::async, [&, host] {
        ProcessSpec spec;
        spec.argv = ssh(plan, host);
        spec.argv.push_back("--");
        spec.argv.push_back("test -x " + shell_quote(deployment.xpuperf) + " && test -d " +
                            shell_quote(deployment.root + "/cases"));
        spec.log_path = control_dir_ + "/check-" + host + ".log";
        try {
          const ExitStatus s = run_process(spec, std::chrono::seconds(plan.ssh.connect_timeout_s + 20));
          if (s.ok()) return std::string();
          if (s.kind == ExitStatus::Kind::Exited && s.code == 1)
            return "xpuperf is not at " + deployment.xpuperf + " (with " + deployment.root + "/cases) on " + host +
                   ": deploy it there or set deploy_path";
          return "cannot reach " + host + " over ssh (" + s.describe() + "): " + last_line_of(spec.log_path);
        } catch (const ProcessError& e) {
          return std::string("cannot run ssh: ") + e.what();
        }
      }));
    }
    for (auto& answer : answers)
      if (const std::string problem = answer.get(); !problem.empty())
        diags.error(where, problem, "check the host name, ssh keys, known_hosts and the ssh section of the plan");
  }

 protected:
  std::vector<std::string> node_command(const Plan& plan, const std::string& host,
                                        const std::vector<std::string>& agent) override {
    auto argv = ssh(plan, host);
    argv.push_back("--");
    argv.push_back(shell_join(agent));
    return argv;
  }

  void stop_node(const Plan& plan, const std::string& host, const std::string& node_dir) override {
    ProcessSpec spec;
    spec.argv = ssh(plan, host);
    spec.argv.push_back("--");
    spec.argv.push_back("kill -TERM \"$(cat " + shell_quote(node_dir + "/node_agent.pid") + ")\"");
    try {
      run_process(spec, std::chrono::seconds(plan.ssh.connect_timeout_s + 10));
    } catch (const ProcessError&) {
    }
  }

  void collect(const Plan& plan, const std::string& host, const std::string& node_dir,
               const std::string& round_dir) override {
    std::error_code ec;
    if (fs::exists(node_dir + "/node_status.json", ec)) return;  // shared filesystem, or this machine
    ProcessSpec spec;
    spec.argv = {"scp", "-r", "-q", "-P", std::to_string(plan.ssh.port)};
    options(plan, spec.argv);
    const std::string remote_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    spec.argv.push_back((plan.ssh.user.empty() ? "" : plan.ssh.user + "@") + remote_host + ":" + node_dir);
    spec.argv.push_back(round_dir + "/");
    spec.log_path = node_dir + "/collect.log";
    try {
      run_process(spec, std::chrono::minutes(30));
    } catch (const ProcessError&) {
    }
  }

 private:
  void options(const Plan& plan, std::vector<std::string>& argv) const {
    for (const std::string& o :
         {std::string("BatchMode=yes"), "ConnectTimeout=" + std::to_string(plan.ssh.connect_timeout_s),
          std::string("StrictHostKeyChecking=yes"), std::string("ControlMaster=auto"),
          "ControlPath=" + control_dir_ + "/%C", std::string("ControlPersist=300"), std::string("LogLevel=ERROR")}) {
      argv.push_back("-o");
      argv.push_back(o);
    }
    if (!plan.ssh.known_hosts.empty()) {
      argv.push_back("-o");
      argv.push_back("UserKnownHostsFile=" + expand_home(plan.ssh.known_hosts));
    }
    if (!plan.ssh.identity_file.empty()) {
      argv.push_back("-i");
      argv.push_back(expand_home(plan.ssh.identity_file));
    }
  }

  std::vector<std::string> ssh(const Plan& plan, const std::string& host) const {
    std::vector<std::string> argv = {"ssh", "-p", std::to_string(plan.ssh.port)};
    options(plan, argv);
    if (!plan.ssh.user.empty()) {
      argv.push_back("-l");
      argv.push_back(plan.ssh.user);
    }
    argv.push_back(host);
    return argv;
  }

  std::string control_dir_;
};

}  // namespace

std::unique_ptr<Launcher> make_ssh_launcher() {
  return std::make_unique<SshLauncher>();
}

}  // namespace xpuperf
