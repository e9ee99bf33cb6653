//===- RankStarter.cpp - start one rank of the program --------------------===//

#include "RankStarter.h"

#include "rtxrt/core/FaultSwitches.h"
#include "rtxrt/core/Tensor.h"
#include "rtxrt/elastic/LaunchEnvironment.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace rtxlaunch;

RankStarter::RankStarter(const Options &options)
    : options_(options), launcherPid_(getpid()) {
  try {
    failForkAt_ = static_cast<int>(
        rtxrt::faultCount(rtxrt::FaultSwitch::LaunchFailForkAt));
  } catch (const rtxrt::Error &error) {
    std::fprintf(stderr, "rtx-launch: error: %s\n", error.what());
    std::exit(2);
  }
}

std::vector<std::string>
RankStarter::programLine(int64_t world, int round,
                         const std::string &planned) const {
  std::vector<std::string> program;
  bool resumes = false, replaced = planned.empty();
  for (std::string arg : options_.program) {
    struct stat st;
    if (!replaced && arg.find('/') != std::string::npos &&
        stat(arg.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(arg.c_str(), X_OK) == 0) {
      arg = planned;
      replaced = true;
    }
    for (size_t at; (at = arg.find("{world}")) != std::string::npos;)
      arg.replace(at, 7, std::to_string(world));
    resumes = resumes || arg == "--resume";
    program.push_back(arg);
  }
  if (round > 0 && !resumes)
    program.push_back("--resume");
  return program;
}

std::string RankStarter::start(Child &child, const RoundSpec &spec, int local,
                               int64_t epoch) const {
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  auto cannotStart = [&](const char *what, int error) {
    for (int fd : {out[0], out[1], err[0], err[1]})
      if (fd >= 0)
        close(fd);
    return std::string(what) + ": " + std::strerror(error);
  };
  if (pipe(out) != 0 || pipe(err) != 0)
    return cannotStart("pipe", errno);
  bool failFork = epoch == 0 && local == failForkAt_;
  pid_t pid = failFork ? (errno = EAGAIN, -1) : fork();
  if (pid < 0)
    return cannotStart("fork", errno);
  if (pid == 0) {
    close(out[0]);
    close(err[0]);
    becomeRank(spec, local, epoch, out[1], err[1]);
  }
  setpgid(pid, pid);
  close(out[1]);
  close(err[1]);
  child = Child();
  child.pid = pid;
  child.rank = spec.rankOf(local);
  child.local = local;
  child.out = out[0];
  child.err = err[0];
  return "";
}

void RankStarter::becomeRank(const RoundSpec &spec, int local, int64_t epoch,
                             int out, int err) const {
  // Its own process group, so stopping a rank stops what it started.
  setpgid(0, 0);
  // A rank ends with its agent: the ranks of a lost node's agent go with
  // it, and none runs on unsupervised.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcherPid_)
    _exit(1);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);
  // The one handoff to the program (rtxrt/elastic/LaunchEnvironment.h). The node
  // placement is now in RANK; an outer launcher's NODE_RANK etc. stay for
  // the program, which does not read them as its own.
  rtxrt::LaunchHandoff handoff;
  handoff.rank = spec.rankOf(local);
  handoff.world = spec.world();
  handoff.localRank = local;
  handoff.localWorld = spec.ranks;
  handoff.restartRound = spec.round;
  handoff.inJob = options_.inJob;
  handoff.recoverEpoch = epoch;
  handoff.store = options_.store;
  handoff.devices = options_.devices;
  handoff.trace = options_.trace;
  handoff.traceSteps = options_.traceSteps;
  handoff.runId = spec.runId;
  for (const auto &[name, value] : handoff.variables())
    setenv(name.c_str(), value.c_str(), 1);
  std::vector<std::string> program = programLine(
      spec.world(), epoch > 0 ? spec.round + 1 : spec.round, spec.planned);
  std::vector<char *> args;
  for (std::string &a : program)
    args.push_back(a.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "cannot start '%s': %s\n", args[0],
               std::strerror(errno));
  _exit(127);
}
