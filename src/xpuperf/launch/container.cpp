#include "xpuperf/launch/container.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "xpuperf/core/files.h"
#include "xpuperf/core/process.h"

namespace xpuperf {
namespace fs = std::filesystem;

std::vector<std::string> ContainerCli::recipe_label(const std::string& image) const {
  return {engine_, "image", "inspect", "--format", std::string("{{index .Config.Labels \"") + kRecipeLabel + "\"}}",
          image};
}

std::vector<std::string> ContainerCli::build(const std::string& image, const std::string& recipe_dir,
                                             const std::string& hash) const {
  return {engine_,   "build",
          "--tag",   image,
          "--label", std::string(kRecipeLabel) + "=" + hash,
          "--file",  recipe_dir + "/Dockerfile",
          recipe_dir};
}

std::vector<std::string> ContainerCli::run(const ContainerRun& spec) const {
  std::vector<std::string> argv = {engine_, "run", "--detach", "--name", spec.name, "--label", "xpuperf.round=1",
                                   // The ranks talk over the host's network and shared memory (NCCL, Gloo);
                                   // with the host's IPC namespace /dev/shm is the host's (no --shm-size).
                                   "--network", "host", "--ipc", "host"};
  if (spec.privileged)
    argv.push_back("--privileged");
  else
    argv.insert(argv.end(), {"--security-opt", "no-new-privileges"});
  for (const auto& v : spec.volumes) argv.insert(argv.end(), {"--volume", v});
  for (const auto& [k, v] : spec.env) argv.insert(argv.end(), {"--env", k + "=" + v});
  argv.insert(argv.end(), spec.options.begin(), spec.options.end());
  // `sleep` as PID 1 ignores SIGTERM: the container is removed with rm -f, never stopped.
  argv.insert(argv.end(), {spec.image, "sleep", "infinity"});
  return argv;
}

std::vector<std::string> ContainerCli::exec(const std::string& name,
                                            const std::vector<std::pair<std::string, std::string>>& env,
                                            const std::string& workdir, const std::vector<std::string>& env_files,
                                            const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {engine_, "exec", "--workdir", workdir};
  for (const auto& [k, v] : env) out.insert(out.end(), {"--env", k + "=" + v});
  // A fixed script, the files and the command as separate arguments: nothing is quoted.
  out.insert(out.end(), {name, "/bin/sh", "-c",
                         "while [ \"$1\" != -- ]; do if [ -f \"$1\" ]; then . \"$1\" || exit 125; fi; shift; done; "
                         "shift; exec \"$@\"",
                         "xpuperf-rank"});
  out.insert(out.end(), env_files.begin(), env_files.end());
  out.push_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::vector<std::string> ContainerCli::remove(const std::string& name) const {
  if (engine_ == "podman") return {engine_, "rm", "--force", "--time", "0", name};
  return {engine_, "rm", "--force", name};
}

std::vector<std::string> ContainerCli::list(const std::string& prefix) const {
  return {engine_, "ps", "--all", "--format", "{{.Names}}", "--filter", "name=" + prefix};
}

std::string recipe_dir(const std::string& root, const std::string& vendor) {
  return root + "/vendors/" + vendor + "/container";
}

std::string recipe_hash(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  // FNV-1a, 64 bits: stable across builds and machines, enough to notice a changed recipe.
  std::uint64_t h = 1469598103934665603ull;
  auto add = [&h](const std::string& bytes) {
    for (const unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // a separator, so that "ab"+"c" differs from "a"+"bc"
  };
  for (const auto& f : files) {
    add(f.lexically_relative(dir).string());
    std::ifstream in(f, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    add(bytes.str());
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string container_image(const ContainerSettings& settings, const std::string& vendor) {
  return settings.image.empty() ? "xpuperf-" + vendor + ":latest" : settings.image;
}

std::string container_name(const std::string& node_dir, const std::string& suffix) {
  const fs::path node(node_dir);
  const std::string round = node.parent_path().filename().string();                   // round<N>
  const std::string case_dir = node.parent_path().parent_path().filename().string();  // <case key>
  const std::string run = node.parent_path().parent_path().parent_path().filename().string();
  const std::string node_name = node.filename().string();  // <host>_noderank<i>
  const auto at = node_name.rfind("_noderank");
  std::string name = "xpuperf-" + run + "-" + case_dir + "-r" + round.substr(std::min<std::size_t>(5, round.size())) +
                     "-n" + (at == std::string::npos ? node_name : node_name.substr(at + 9)) + "-" + suffix;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return name;
}

ImagePrepared prepare_image(const ContainerCli& cli, const ContainerSettings& settings, const std::string& image,
                            const std::string& recipe, const std::string& build_log) {
  const bool has_recipe = settings.build && fs::exists(recipe + "/Dockerfile");
  // One build at a time per image on this host (two node agents of one round may share it).
  std::string lock_name = "xpuperf-image-" + image + ".lock";
  for (char& c : lock_name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  const int lock = ::open((fs::temp_directory_path() / lock_name).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0666);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  ImagePrepared result;
  // The recipe label of the image the name points to now, or nullopt when there is none.
  const auto label_of_image = [&]() -> std::optional<std::string> {
    ProcessSpec inspect;
    inspect.argv = cli.recipe_label(image);
    inspect.log_path = build_log + ".inspect";
    const bool exists = run_process(inspect, std::chrono::seconds(60)).ok();
    const std::string label = exists ? first_line_of(inspect.log_path) : "";
    fs::remove(inspect.log_path);
    if (!exists) return std::nullopt;
    return label;
  };
  try {
    const auto before = label_of_image();
    const bool exists = before.has_value();
    const std::string label = before.value_or("");
    if (!has_recipe) {
      result.ok = exists;
      result.what = exists ? "image " + image + " as is (no recipe)"
                           : "image " + image + " is not on this host, and there is no recipe " + recipe +
                                 "/Dockerfile to build it from (" + cli.engine() + " load or pull it first)";
    } else {
      const std::string hash = recipe_hash(recipe);
      if (exists && label == hash) {
        result.ok = true;
        result.what = "image " + image + " up to date (recipe " + hash + ")";
      } else {
        ProcessSpec build;
        build.argv = cli.build(image, recipe, hash);
        build.log_path = build_log;
        const ExitStatus s = run_process(build, std::chrono::hours(2));
        result.ok = s.ok();
        result.what = s.ok() ? "image " + image + " built from " + recipe + " (recipe " + hash +
                                   (exists ? ", was " + (label.empty() ? std::string("unlabelled") : label) : "") + ")"
                             : "building " + image + " from " + recipe + " " + s.describe() + ": " +
                                   last_line_of(build_log) + " (see " + build_log + ")";
        // The name must point at what was built. Podman before 4.8 (Debian 12 has 4.3) tags by
        // rewriting an image's whole list of names from a copy read earlier (containers/podman#17515),
        // so a build elsewhere on the host ending on a cached image that once had this name can give
        // the name back to it. A round on the old image would measure the wrong software.
        if (result.ok) {
          const auto after = label_of_image();
          if (after.value_or("") != hash) {
            result.ok = false;
            result.what =
                "image " + image + " was built from " + recipe + " (recipe " + hash + "), but the name " +
                (after ? "then pointed at an image of recipe " + (after->empty() ? "none" : *after) : "was gone") +
                " when checked: another build or removal on this host changed it meanwhile; run again";
          }
        }
      }
    }
  } catch (const ProcessError& e) {
    result.ok = false;
    result.what = "cannot run " + cli.engine() + ": " + e.what();
  }
  if (lock >= 0) ::close(lock);
  return result;
}

}  // namespace xpuperf
