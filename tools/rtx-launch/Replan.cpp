//===- Replan.cpp - the program for another world size, planned -----------===//

#include "Replan.h"

#include "rtxrt/core/Tensor.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace rtxlaunch;

namespace {

/// The folder of this executable: rtx-opt and rtx-translate are built
/// beside rtx-launch (build/bin, or an install's bin).
std::string toolDirectory() {
  std::vector<char> path(4096);
  ssize_t n = readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0)
    return "";
  std::string self(path.data(), static_cast<size_t>(n));
  return self.substr(0, self.rfind('/'));
}

std::string tail(const std::string &path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);)
    all.push_back(line);
  std::string text;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size();
       ++i)
    text += "\n  " + all[i];
  return text;
}

/// Runs `argv` with its output appended to `log`; throws naming `what`.
void run(const std::vector<std::string> &argv, const std::string &log,
         const std::string &what) {
  pid_t pid = fork();
  if (pid < 0)
    throw rtxrt::Error("--replan: cannot start " + what + ": " +
                       std::strerror(errno));
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot start %s: %s\n", args[0],
                 std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw rtxrt::Error("--replan: " + what + " failed (" + log +
                       "):" + tail(log, 12));
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void makeDirectories(const std::string &dir) {
  for (size_t at = 1; at <= dir.size(); ++at)
    if (at == dir.size() || dir[at] == '/') {
      std::string prefix = dir.substr(0, at);
      if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
        throw rtxrt::Error("--replan: cannot create " + prefix + ": " +
                           std::strerror(errno));
    }
}

/// What the planner chose, from the rtx.plan attribute of the planned
/// module ("mesh=dp:2,tp:2" and its ZeRO stage), for the launcher's line.
std::string planOf(const std::string &mlir) {
  std::ifstream in(mlir);
  std::stringstream text;
  text << in.rdbuf();
  std::smatch match;
  std::string s = text.str();
  std::string plan;
  if (std::regex_search(s, match, std::regex("distribute = \"([^\"]*)\"")))
    plan = match[1];
  if (std::regex_search(s, match, std::regex("zero = ([0-9]+)")))
    plan += " zero=" + match[1].str();
  return plan.empty() ? "the planner's plan" : plan;
}

} // namespace

std::string rtxlaunch::programForWorld(const ReplanOptions &options,
                                       int world) {
  std::string dir = options.cache + "/world-" + std::to_string(world);
  std::string program = dir + "/program";
  if (exists(program)) {
    std::fprintf(stderr,
                 "rtx-launch: the program for %d rank(s) is cached: "
                 "%s\n",
                 world, program.c_str());
    return program;
  }
  makeDirectories(dir);
  std::string tools = toolDirectory();
  std::string log = dir + "/replan.log";
  std::string planned = dir + "/train.mlir";
  run({tools + "/rtx-opt", options.model,
       "-rtx-auto-partition=profile=" + options.profile +
           " devices=" + std::to_string(world),
       "-rtx-distribute=from-plan=true" +
           (options.distribute.empty() ? "" : " " + options.distribute),
       "-o", planned},
      log, "planning for " + std::to_string(world) + " rank(s) (rtx-opt)");
  run({tools + "/rtx-translate", planned, "-o", dir + "/program.cpp",
       "--build-script", dir + "/build.sh"},
      log, "rtx-translate");
  // Built aside and renamed: a build that stops half-way is never cached.
  run({"sh", dir + "/build.sh", dir + "/program.cpp", program + ".tmp"}, log,
      "building the program");
  if (rename((program + ".tmp").c_str(), program.c_str()) != 0)
    throw rtxrt::Error("--replan: cannot rename " + program +
                       ".tmp: " + std::strerror(errno));
  std::fprintf(stderr,
               "rtx-launch: re-planned for %d rank(s) on profile %s: %s "
               "(%s)\n",
               world, options.profile.c_str(), planOf(planned).c_str(),
               program.c_str());
  return program;
}
