// The container engines' command lines (argument vectors, no shell strings), the recipe hash,
// the image's preparation (against a fake engine) and container names.

#include "xpuperf/launch/container.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "xpuperf/core/plan.h"

namespace xpuperf {
namespace {

namespace fs = std::filesystem;
using Args = std::vector<std::string>;

TEST(Container, RunIsLeastPrivilegeOnTheHostNetworkWithThePlanOptionsLast) {
  ContainerRun spec;
  spec.name = "xpuperf-run1-case-r1-n0-42";
  spec.image = "img:1";
  spec.volumes = {"/root:/root:ro"};
  spec.env = {{"NCCL_DEBUG", "INFO"}};
  spec.options = {"--gpus", "all"};
  EXPECT_EQ(ContainerCli("podman").run(spec), (Args{"podman",
                                                    "run",
                                                    "--detach",
                                                    "--name",
                                                    "xpuperf-run1-case-r1-n0-42",
                                                    "--label",
                                                    "xpuperf.round=1",
                                                    "--network",
                                                    "host",
                                                    "--ipc",
                                                    "host",
                                                    "--security-opt",
                                                    "no-new-privileges",
                                                    "--volume",
                                                    "/root:/root:ro",
                                                    "--env",
                                                    "NCCL_DEBUG=INFO",
                                                    "--gpus",
                                                    "all",
                                                    "img:1",
                                                    "sleep",
                                                    "infinity"}));
  spec.privileged = true;
  const Args privileged = ContainerCli("docker").run(spec);
  EXPECT_EQ(privileged[0], "docker");
  EXPECT_NE(std::find(privileged.begin(), privileged.end(), "--privileged"), privileged.end());
  EXPECT_EQ(std::find(privileged.begin(), privileged.end(), "no-new-privileges"), privileged.end());
}

TEST(Container, ExecSourcesTheEnvironmentFilesThenRunsTheRank) {
  const Args argv =
      ContainerCli("podman").exec("c1", {{"RANK", "0"}}, "/out", {"/v/env.sh"}, {"/bin/xpuperf", "train"});
  EXPECT_EQ(argv, (Args{"podman", "exec", "--workdir", "/out", "--env", "RANK=0", "c1", "/bin/sh", "-c",
                        "while [ \"$1\" != -- ]; do if [ -f \"$1\" ]; then . \"$1\" || exit 125; fi; shift; done; "
                        "shift; exec \"$@\"",
                        "xpuperf-rank", "/v/env.sh", "--", "/bin/xpuperf", "train"}));
}

TEST(Container, RemoveAndBuild) {
  EXPECT_EQ(ContainerCli("podman").remove("c1"), (Args{"podman", "rm", "--force", "--time", "0", "c1"}));
  EXPECT_EQ(ContainerCli("docker").remove("c1"), (Args{"docker", "rm", "--force", "c1"}));
  EXPECT_EQ(ContainerCli("docker").build("img:1", "/v/container", "abc"),
            (Args{"docker", "build", "--tag", "img:1", "--label", "xpuperf.recipe-hash=abc", "--file",
                  "/v/container/Dockerfile", "/v/container"}));
}

TEST(Container, RecipeHashFollowsEveryFile) {
  test::TempDir dir;
  dir.write("Dockerfile", "FROM x\n");
  const std::string one = recipe_hash(dir.path());
  EXPECT_EQ(one.size(), 16u);
  EXPECT_EQ(recipe_hash(dir.path()), one);
  dir.write("files/setup.sh", "echo\n");
  const std::string two = recipe_hash(dir.path());
  EXPECT_NE(two, one);
  dir.write("files/setup.sh", "echo hi\n");
  EXPECT_NE(recipe_hash(dir.path()), two);
}

// A fake engine: `image inspect` prints the label kept in a file beside it (fails when there is
// none), `build` writes its --label there unless the file `steal` exists (another build on the host
// took the name back to an image of an older recipe).
std::string fake_engine(const test::TempDir& dir) {
  const std::string path = dir.write("engine", R"(#!/bin/sh
here=$(dirname "$0")
case "$1" in
  image) [ -f "$here/label" ] && cat "$here/label" ;;
  build) [ -f "$here/steal" ] && exit 0
         shift; while [ "$1" != --label ]; do shift; done
         echo "${2#*=}" > "$here/label" ;;
esac
)");
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

TEST(Container, AnImageIsBuiltWhenItsRecipeChangedAndCheckedAfterwards) {
  test::TempDir dir, recipe;
  recipe.write("Dockerfile", "FROM x\n");
  const ContainerCli cli(fake_engine(dir));
  const ContainerSettings settings;
  const std::string log = dir.path() + "/build.log";
  ImagePrepared first = prepare_image(cli, settings, "img:1", recipe.path(), log);
  EXPECT_TRUE(first.ok) << first.what;
  EXPECT_NE(first.what.find("built from"), std::string::npos) << first.what;
  ImagePrepared again = prepare_image(cli, settings, "img:1", recipe.path(), log);
  EXPECT_TRUE(again.ok) << again.what;
  EXPECT_NE(again.what.find("up to date"), std::string::npos) << again.what;

  // The build succeeds, but the name then points at the old recipe's image: refused, not run.
  const std::string old_hash = recipe_hash(recipe.path());
  recipe.write("Dockerfile", "FROM y\n");
  dir.write("steal", "");
  ImagePrepared stolen = prepare_image(cli, settings, "img:1", recipe.path(), log);
  EXPECT_FALSE(stolen.ok) << stolen.what;
  EXPECT_NE(stolen.what.find("then pointed at an image of recipe " + old_hash), std::string::npos) << stolen.what;
  EXPECT_NE(stolen.what.find("run again"), std::string::npos) << stolen.what;
}

TEST(Container, NamesAreUniqueAndSafe) {
  EXPECT_EQ(container_name("/r/run20261122/lenet5_libtorch_CPU_1_1_1/round2/node-a.example_noderank1", "77"),
            "xpuperf-run20261122-lenet5_libtorch_CPU_1_1_1-r2-n1-77");
  EXPECT_EQ(container_name("/r/run 1/a:b/round1/h_noderank0", "1"), "xpuperf-run_1-a_b-r1-n0-1");
  EXPECT_EQ(container_image({}, "nvidia"), "xpuperf-nvidia:latest");
}

}  // namespace
}  // namespace xpuperf
