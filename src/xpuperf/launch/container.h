#pragma once
// Containers for the ranks (FlagPerf's per-round images, without its leftovers): the docker and podman
// command lines as argument vectors, the image built from the vendor's recipe when it is missing
// or when the recipe changed (a content hash in an image label), and unique container names.
// The node agent (node_agent.cpp) runs one container per node and round: `run` it, `exec` each
// rank in it, `rm -f` it at the end whatever happened.

#include <string>
#include <utility>
#include <vector>

#include "xpuperf/core/plan.h"

namespace xpuperf {

// What one round's container is started with.
struct ContainerRun {
  std::string name;
  std::string image;
  std::vector<std::string> volumes;  // host:container[:options]
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> options;  // the plan's run_options, last (they may override ours)
  bool privileged = false;
};

class ContainerCli {
 public:
  explicit ContainerCli(std::string engine) : engine_(std::move(engine)) {}
  const std::string& engine() const { return engine_; }

  // Prints the image's recipe-hash label (fails when the image is missing).
  std::vector<std::string> recipe_label(const std::string& image) const;
  std::vector<std::string> build(const std::string& image, const std::string& recipe_dir,
                                 const std::string& hash) const;
  // A long-lived container that does nothing until ranks are exec'd into it.
  std::vector<std::string> run(const ContainerRun& spec) const;
  // `argv` in container `name`, after sourcing each of `env_files` that exists there.
  std::vector<std::string> exec(const std::string& name, const std::vector<std::pair<std::string, std::string>>& env,
                                const std::string& workdir, const std::vector<std::string>& env_files,
                                const std::vector<std::string>& argv) const;
  std::vector<std::string> remove(const std::string& name) const;
  // Names of the containers, running or not, whose name starts with `prefix`.
  std::vector<std::string> list(const std::string& prefix) const;

 private:
  std::string engine_;
};

inline constexpr const char* kRecipeLabel = "xpuperf.recipe-hash";

// The recipe folder: vendors/<v>/container (Dockerfile and what it copies).
std::string recipe_dir(const std::string& root, const std::string& vendor);
// A content hash of every file under `dir` (names and bytes, in sorted order): 16 hex digits.
std::string recipe_hash(const std::string& dir);
// The image a plan's containers run: container.image, else xpuperf-<vendor>:latest.
std::string container_image(const ContainerSettings& settings, const std::string& vendor);
// A container name no other round, run or host's agent uses: xpuperf-<run>-<case>-r<round>-n<node>
// from the node's folder (<run>/<case>/round<N>/<host>_noderank<i>), then `suffix` (the agent's pid).
std::string container_name(const std::string& node_dir, const std::string& suffix);

struct ImagePrepared {
  bool ok = false;
  std::string what;  // "up to date", "built (recipe hash ...)", or why it failed
};
// Builds the image from the recipe when it is missing or its label differs from the recipe's
// hash (one build at a time per image on a host: a lock file); `build_log` gets the build's
// output. Without a recipe (or build: false) the image must exist.
ImagePrepared prepare_image(const ContainerCli& cli, const ContainerSettings& settings, const std::string& image,
                            const std::string& recipe, const std::string& build_log);

}  // namespace xpuperf
