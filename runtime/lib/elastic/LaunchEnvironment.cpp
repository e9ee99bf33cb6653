//===- LaunchEnvironment.cpp - which launcher started this process --------===//
//
// The order in which launchers are recognised matters where they nest:
// rtx-launch and torchrun set RANK/WORLD_SIZE for the processes they start,
// and are often themselves started by srun or mpirun (one per node), whose
// variables the children inherit. RANK/WORLD_SIZE therefore win, then Open
// MPI, then Slurm. Within one launcher every value is checked against the
// others; across launchers there is nothing to check, since an outer
// launcher's rank is a node's, not this process's.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/elastic/LaunchEnvironment.h"

#include "rtxrt/core/Tensor.h"

#include <cctype>
#include <cstdlib>
#include <set>
#include <unistd.h>

using namespace rtxrt;

EnvironmentLookup rtxrt::processEnvironment() {
  return [](const std::string &name) { return std::getenv(name.c_str()); };
}

namespace {

class Reader {
public:
  explicit Reader(const EnvironmentLookup &env) : env_(env) {}

  bool has(const std::string &name) const { return env_(name) != nullptr; }
  std::string text(const std::string &name) const {
    const char *value = env_(name);
    return value ? value : "";
  }
  /// The first of `names` that is set; empty when none is.
  std::string firstSet(std::initializer_list<const char *> names) const {
    for (const char *name : names)
      if (has(name))
        return name;
    return "";
  }
  /// A whole non-negative integer; anything else names the variable.
  int64_t integer(const std::string &name) const {
    std::string value = text(name);
    size_t i = 0;
    while (i < value.size() &&
           std::isspace(static_cast<unsigned char>(value[i])))
      ++i;
    size_t start = i;
    while (i < value.size() &&
           std::isdigit(static_cast<unsigned char>(value[i])))
      ++i;
    size_t end = i;
    while (i < value.size() &&
           std::isspace(static_cast<unsigned char>(value[i])))
      ++i;
    if (start == end || i != value.size() || end - start > 9)
      throw Error(name + "='" + value +
                  "' is not a non-negative integer (set by the launcher)");
    return std::atoll(value.substr(start, end - start).c_str());
  }
  int64_t integer(const std::string &name, int64_t fallback) const {
    return has(name) ? integer(name) : fallback;
  }
  /// At least one.
  int64_t count(const std::string &name) const {
    int64_t n = integer(name);
    if (n < 1)
      throw Error(name + "=" + std::to_string(n) + " must be at least 1");
    return n;
  }

private:
  const EnvironmentLookup &env_;
};

void checkBelow(const std::string &what, int64_t value, const std::string &of,
                int64_t bound) {
  if (value >= bound)
    throw Error(what + "=" + std::to_string(value) + " is outside [0, " +
                std::to_string(bound) + ") given by " + of + "=" +
                std::to_string(bound));
}

/// Slurm's SLURM_TASKS_PER_NODE ("2(x3),1"): the count on node `node`.
int64_t tasksOnNode(const std::string &spec, int64_t node) {
  int64_t at = 0;
  size_t i = 0;
  auto bad = [&] {
    return Error("SLURM_TASKS_PER_NODE='" + spec +
                 "' is not a Slurm task count list (like 2(x3),1)");
  };
  while (i < spec.size()) {
    size_t start = i;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])))
      ++i;
    if (start == i)
      throw bad();
    int64_t tasks = std::atoll(spec.substr(start, i - start).c_str());
    int64_t repeat = 1;
    if (i < spec.size() && spec[i] == '(') {
      if (spec.compare(i, 2, "(x") != 0)
        throw bad();
      i += 2;
      size_t digits = i;
      while (i < spec.size() &&
             std::isdigit(static_cast<unsigned char>(spec[i])))
        ++i;
      if (digits == i || i >= spec.size() || spec[i] != ')')
        throw bad();
      repeat = std::atoll(spec.substr(digits, i - digits).c_str());
      ++i;
    }
    if (node < at + repeat)
      return tasks;
    at += repeat;
    if (i < spec.size() && spec[i++] != ',')
      throw bad();
  }
  throw Error("SLURM_TASKS_PER_NODE='" + spec + "' lists " +
              std::to_string(at) + " node(s), but SLURM_NODEID is " +
              std::to_string(node));
}

void readTorchStyle(const Reader &env, LaunchEnvironment &launch) {
  if (!env.has("RANK") || !env.has("WORLD_SIZE"))
    throw Error(std::string(env.has("RANK") ? "RANK" : "WORLD_SIZE") +
                " is set but " + (env.has("RANK") ? "WORLD_SIZE" : "RANK") +
                " is not: a launcher sets both");
  if (env.text("RTX_LAUNCHER") == "rtx-launch")
    launch.launcher = "rtx-launch";
  else if (env.has("TORCHELASTIC_RUN_ID"))
    launch.launcher = "torchrun";
  else
    launch.launcher = "RANK/WORLD_SIZE";
  launch.world = env.count("WORLD_SIZE");
  launch.rank = env.integer("RANK");
  checkBelow("RANK", launch.rank, "WORLD_SIZE", launch.world);
  if (env.has("LOCAL_WORLD_SIZE")) {
    launch.localWorld = env.count("LOCAL_WORLD_SIZE");
    if (launch.localWorld > launch.world)
      throw Error("LOCAL_WORLD_SIZE=" + std::to_string(launch.localWorld) +
                  " exceeds WORLD_SIZE=" + std::to_string(launch.world));
  }
  // Without LOCAL_RANK (RANK set by hand) the global rank stands in.
  launch.localRank = env.integer("LOCAL_RANK", launch.rank);
  if (launch.localWorld >= 0)
    checkBelow("LOCAL_RANK", launch.localRank, "LOCAL_WORLD_SIZE",
               launch.localWorld);
  std::string nodeVar = env.firstSet({"GROUP_RANK", "NODE_RANK"});
  if (!nodeVar.empty())
    launch.node = env.integer(nodeVar);
  if (env.has("NNODES")) {
    launch.nodes = env.count("NNODES");
    checkBelow(nodeVar.empty() ? "node" : nodeVar, launch.node, "NNODES",
               launch.nodes);
  }
  if (env.has("MASTER_ADDR") || env.has("MASTER_PORT")) {
    launch.masterAddr = env.text("MASTER_ADDR");
    if (launch.masterAddr.empty())
      throw Error("MASTER_PORT is set but MASTER_ADDR is not");
    launch.masterPort = env.integer("MASTER_PORT", 0);
    if (env.has("MASTER_PORT") &&
        (launch.masterPort < 1 || launch.masterPort > 65535))
      throw Error("MASTER_PORT=" + env.text("MASTER_PORT") +
                  " is not a TCP port (1-65535)");
  }
  if (launch.launcher == "torchrun") {
    // torchrun's workers of one node are children of one agent; its pid
    // tells this run from an earlier one with the same (default "none")
    // run id.
    launch.runId = "torchrun-" + env.text("TORCHELASTIC_RUN_ID") + "-" +
                   std::to_string(getppid());
  }
}

void readOpenMpi(const Reader &env, LaunchEnvironment &launch) {
  launch.launcher = "mpirun";
  launch.world = env.count("OMPI_COMM_WORLD_SIZE");
  launch.rank = env.integer("OMPI_COMM_WORLD_RANK");
  checkBelow("OMPI_COMM_WORLD_RANK", launch.rank, "OMPI_COMM_WORLD_SIZE",
             launch.world);
  launch.localWorld = env.count("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (launch.localWorld > launch.world)
    throw Error(
        "OMPI_COMM_WORLD_LOCAL_SIZE=" + std::to_string(launch.localWorld) +
        " exceeds OMPI_COMM_WORLD_SIZE=" + std::to_string(launch.world));
  launch.localRank = env.integer("OMPI_COMM_WORLD_LOCAL_RANK");
  checkBelow("OMPI_COMM_WORLD_LOCAL_RANK", launch.localRank,
             "OMPI_COMM_WORLD_LOCAL_SIZE", launch.localWorld);
  if (env.has("OMPI_MCA_ess_base_jobid"))
    launch.runId = "mpirun-" + env.text("OMPI_MCA_ess_base_jobid");
}

void readSlurm(const Reader &env, LaunchEnvironment &launch) {
  launch.launcher = "slurm";
  std::string worldVar = env.firstSet({"SLURM_NTASKS", "SLURM_NPROCS"});
  if (worldVar.empty())
    throw Error("SLURM_PROCID is set but SLURM_NTASKS is not (start the "
                "program with srun)");
  launch.world = env.count(worldVar);
  launch.rank = env.integer("SLURM_PROCID");
  checkBelow("SLURM_PROCID", launch.rank, worldVar, launch.world);
  launch.localRank = env.integer("SLURM_LOCALID", 0);
  launch.node = env.integer("SLURM_NODEID", 0);
  std::string nodesVar = env.firstSet({"SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
  if (!nodesVar.empty()) {
    launch.nodes = env.count(nodesVar);
    checkBelow("SLURM_NODEID", launch.node, nodesVar, launch.nodes);
    if (launch.nodes > launch.world)
      throw Error(nodesVar + "=" + std::to_string(launch.nodes) + " exceeds " +
                  worldVar + "=" + std::to_string(launch.world));
  }
  if (env.has("SLURM_TASKS_PER_NODE")) {
    launch.localWorld =
        tasksOnNode(env.text("SLURM_TASKS_PER_NODE"), launch.node);
    checkBelow("SLURM_LOCALID", launch.localRank, "SLURM_TASKS_PER_NODE",
               launch.localWorld);
  }
  std::string listVar = env.firstSet(
      {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  if (!listVar.empty()) {
    std::vector<std::string> hosts = expandHostList(env.text(listVar));
    if (hosts.empty())
      throw Error(listVar + " is empty");
    if (launch.nodes >= 0 && static_cast<int64_t>(hosts.size()) != launch.nodes)
      throw Error(listVar + "='" + env.text(listVar) + "' names " +
                  std::to_string(hosts.size()) + " host(s), but " + nodesVar +
                  " is " + std::to_string(launch.nodes));
    launch.masterAddr = hosts.front();
  }
  if (env.has("MASTER_ADDR"))
    launch.masterAddr = env.text("MASTER_ADDR");
  launch.masterPort = env.integer("MASTER_PORT", 0);
  if (env.has("SLURM_JOB_ID"))
    launch.runId = "slurm-" + env.text("SLURM_JOB_ID") + "." +
                   (env.has("SLURM_STEP_ID") ? env.text("SLURM_STEP_ID") : "0");
}

void readStore(const Reader &env, LaunchEnvironment &launch) {
  if (env.has("RTX_STORE")) {
    launch.store = env.text("RTX_STORE");
    launch.storeSource = "RTX_STORE";
    if (launch.store.rfind("file:", 0) != 0 &&
        launch.store.rfind("redis://", 0) != 0)
      throw Error("RTX_STORE='" + launch.store +
                  "' is not file:DIR or redis://HOST:PORT");
    return;
  }
  // torchrun's MASTER_PORT is its own TCPStore, which rtx cannot speak;
  // elsewhere (a Slurm or mpirun script) MASTER_ADDR:MASTER_PORT is taken to
  // be a redis-server the script started.
  if (launch.launcher != "torchrun" && !launch.masterAddr.empty() &&
      launch.masterPort > 0 && env.has("MASTER_PORT")) {
    launch.store = "redis://" + launch.masterAddr + ":" +
                   std::to_string(launch.masterPort);
    launch.storeSource = "MASTER_ADDR/MASTER_PORT";
    return;
  }
  // All ranks on this machine: a directory of /tmp, named by the run.
  if (launch.world > 1 && launch.singleNode() && !launch.runId.empty() &&
      (launch.launcher == "torchrun" || launch.launcher == "mpirun" ||
       launch.launcher == "slurm")) {
    launch.store = "file:/tmp/rtx-store-" + launch.runId;
    launch.storeSource = launch.launcher + "'s job id, one node";
  }
}

DeviceChoice parseDevice(const std::string &name, const std::string &source) {
  DeviceChoice choice;
  choice.listed = true;
  choice.name = name;
  choice.source = source;
  std::string digits = name;
  if (name == "cpu") {
    choice.kind = "cpu";
    return choice;
  }
  if (name.rfind("cuda:", 0) == 0)
    digits = name.substr(5);
  bool numeric = !digits.empty() && digits.size() < 6;
  for (char c : digits)
    numeric = numeric && std::isdigit(static_cast<unsigned char>(c));
  if (!numeric)
    throw Error(source + ": '" + name + "' is not a device (cpu, cuda:N or N)");
  choice.kind = "cuda";
  choice.index = std::atoll(digits.c_str());
  return choice;
}

void readDevice(const Reader &env, LaunchEnvironment &launch) {
  if (env.has("RTX_DEVICE")) {
    launch.device = parseDevice(env.text("RTX_DEVICE"), "RTX_DEVICE");
  } else if (env.has("RTX_DEVICES")) {
    std::string list = env.text("RTX_DEVICES");
    std::vector<DeviceChoice> devices;
    std::set<std::string> seen;
    size_t start = 0;
    while (true) {
      size_t comma = list.find(',', start);
      std::string item = list.substr(start, comma - start);
      DeviceChoice device = parseDevice(item, "RTX_DEVICES");
      if (device.kind == "cuda" &&
          !seen.insert(std::to_string(device.index)).second)
        throw Error("RTX_DEVICES='" + list +
                    "' names cuda:" + std::to_string(device.index) + " twice");
      devices.push_back(device);
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
    if (launch.localRank >= static_cast<int64_t>(devices.size()))
      throw Error("RTX_DEVICES='" + list + "' lists " +
                  std::to_string(devices.size()) +
                  " device(s), but this process is local rank " +
                  std::to_string(launch.localRank) +
                  ": list one device per rank of the node");
    launch.device = devices[launch.localRank];
  }
  if (launch.device.listed && launch.device.kind == "cpu")
    launch.device.index = launch.localRank;
}

} // namespace

LaunchEnvironment
rtxrt::readLaunchEnvironment(const EnvironmentLookup &lookup) {
  Reader env(lookup);
  LaunchEnvironment launch;
  if (env.has("RANK") || env.has("WORLD_SIZE"))
    readTorchStyle(env, launch);
  else if (env.has("OMPI_COMM_WORLD_SIZE") || env.has("OMPI_COMM_WORLD_RANK"))
    readOpenMpi(env, launch);
  else if (env.has("SLURM_PROCID"))
    readSlurm(env, launch);
  else
    launch.localWorld = 1;
  if (launch.world == 1)
    launch.localWorld = launch.nodes = 1;
  if (launch.localWorld == launch.world)
    launch.nodes = 1;
  if (env.has("RTX_RUN_ID"))
    launch.runId = env.text("RTX_RUN_ID");
  readStore(env, launch);
  readDevice(env, launch);
  return launch;
}

std::string LaunchEnvironment::describe() const {
  std::string text = launcher == "none" ? "no launcher" : launcher;
  text += ": rank " + std::to_string(rank) + " of " + std::to_string(world) +
          " (local rank " + std::to_string(localRank);
  if (localWorld >= 0)
    text += " of " + std::to_string(localWorld);
  if (nodes >= 0)
    text += ", node " + std::to_string(node) + " of " + std::to_string(nodes);
  text += ")";
  if (!store.empty())
    text += ", store " + store + " (" + storeSource + ")";
  if (device.listed)
    text += ", device " + device.name + " (" + device.source + ")";
  return text;
}

std::vector<std::string> rtxrt::expandHostList(const std::string &list) {
  std::vector<std::string> hosts;
  auto bad = [&](const std::string &why) {
    return Error("host list '" + list + "' is malformed: " + why);
  };
  size_t i = 0;
  while (i < list.size()) {
    // One item: a prefix, then optionally [ranges] and a suffix.
    size_t open = list.find_first_of("[,", i);
    if (open == std::string::npos || list[open] == ',') {
      size_t end = open == std::string::npos ? list.size() : open;
      if (end == i)
        throw bad("an empty host name");
      hosts.push_back(list.substr(i, end - i));
      i = end == list.size() ? end : end + 1;
      if (i == list.size() && end != list.size())
        throw bad("a trailing comma");
      continue;
    }
    std::string prefix = list.substr(i, open - i);
    size_t close = list.find(']', open);
    if (close == std::string::npos)
      throw bad("'[' without ']'");
    std::string ranges = list.substr(open + 1, close - open - 1);
    size_t end = list.find(',', close);
    std::string suffix = list.substr(
        close + 1, (end == std::string::npos ? list.size() : end) - close - 1);
    if (suffix.find_first_of("[]") != std::string::npos)
      throw bad("more than one bracket per host name");
    size_t r = 0;
    while (true) {
      size_t comma = ranges.find(',', r);
      std::string range = ranges.substr(r, comma - r);
      size_t dash = range.find('-');
      std::string low = range.substr(0, dash);
      std::string high =
          dash == std::string::npos ? low : range.substr(dash + 1);
      auto digitsOnly = [](const std::string &s) {
        if (s.empty() || s.size() > 9)
          return false;
        for (char c : s)
          if (!std::isdigit(static_cast<unsigned char>(c)))
            return false;
        return true;
      };
      if (!digitsOnly(low) || !digitsOnly(high))
        throw bad("'" + range + "' is not N or N-M");
      int64_t from = std::atoll(low.c_str()), to = std::atoll(high.c_str());
      if (to < from)
        throw bad("'" + range + "' runs backwards");
      if (to - from > 100000)
        throw bad("'" + range + "' is too long");
      // Slurm keeps the width of the lower bound: node[08-10].
      size_t width = low.size();
      for (int64_t n = from; n <= to; ++n) {
        std::string number = std::to_string(n);
        if (number.size() < width)
          number.insert(0, width - number.size(), '0');
        hosts.push_back(prefix + number + suffix);
      }
      if (comma == std::string::npos)
        break;
      r = comma + 1;
    }
    if (end == std::string::npos)
      break;
    i = end + 1;
    if (i == list.size())
      throw bad("a trailing comma");
  }
  return hosts;
}

NodePlacement rtxrt::readNodePlacement(const EnvironmentLookup &lookup) {
  Reader env(lookup);
  NodePlacement placement;
  auto read = [&](const std::string &nodeVar, const std::string &nodesVar) {
    placement.node = env.integer(nodeVar, 0);
    placement.nodes = env.has(nodesVar) ? env.count(nodesVar) : 1;
    placement.source = nodeVar + "/" + nodesVar;
    checkBelow(nodeVar, placement.node, nodesVar, placement.nodes);
  };
  std::string torchNode = env.firstSet({"GROUP_RANK", "NODE_RANK"});
  if (!torchNode.empty() || env.has("NNODES")) {
    read(torchNode.empty() ? "NODE_RANK" : torchNode, "NNODES");
  } else if (env.has("SLURM_NODEID")) {
    std::string nodesVar =
        env.firstSet({"SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
    read("SLURM_NODEID", nodesVar.empty() ? "SLURM_NNODES" : nodesVar);
  } else if (env.has("OMPI_COMM_WORLD_SIZE")) {
    // mpirun starts one launcher per node (--map-by ppr:1:node): its rank
    // is the node. Several on one node would start the same ranks twice.
    int64_t local = env.integer("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
    if (local != 1)
      throw Error("OMPI_COMM_WORLD_LOCAL_SIZE=" + std::to_string(local) +
                  ": mpirun started several rtx-launch on one node; start "
                  "one per node (mpirun --map-by ppr:1:node)");
    read("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  }
  return placement;
}

std::vector<std::pair<std::string, std::string>>
LaunchHandoff::variables() const {
  std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_RANK", std::to_string(localRank)},
      {"LOCAL_WORLD_SIZE", std::to_string(localWorld)},
      {"RTX_RESTART_ROUND", std::to_string(restartRound)}};
  if (inJob) {
    set.push_back({"RTX_RECOVER", "in-job"});
    set.push_back({"RTX_RECOVER_EPOCH", std::to_string(recoverEpoch)});
  }
  if (!store.empty())
    set.push_back({"RTX_STORE", store});
  if (!devices.empty())
    set.push_back({"RTX_DEVICES", devices});
  set.push_back({"RTX_LAUNCHER", launcher});
  if (!trace.empty()) {
    set.push_back({"RTX_TRACE", trace});
    if (!traceSteps.empty())
      set.push_back({"RTX_TRACE_STEPS", traceSteps});
  }
  set.push_back({"RTX_RUN_ID", runId});
  return set;
}

LaunchHandoff rtxrt::readLaunchHandoff(const EnvironmentLookup &lookup) {
  Reader env(lookup);
  LaunchHandoff handoff;
  handoff.rank = env.integer("RANK", handoff.rank);
  handoff.world = env.has("WORLD_SIZE") ? env.count("WORLD_SIZE") : 1;
  handoff.localRank = env.integer("LOCAL_RANK", handoff.localRank);
  handoff.localWorld =
      env.has("LOCAL_WORLD_SIZE") ? env.count("LOCAL_WORLD_SIZE") : 1;
  handoff.restartRound = env.integer("RTX_RESTART_ROUND", 0);
  std::string recover = env.text("RTX_RECOVER");
  if (!recover.empty() && recover != "in-job" && recover != "restart")
    throw Error("RTX_RECOVER is '" + recover + "': use in-job or restart");
  handoff.inJob = recover == "in-job";
  handoff.recoverEpoch = env.integer("RTX_RECOVER_EPOCH", 0);
  handoff.store = env.text("RTX_STORE");
  handoff.devices = env.text("RTX_DEVICES");
  handoff.launcher = env.text("RTX_LAUNCHER");
  handoff.trace = env.text("RTX_TRACE");
  handoff.traceSteps = env.text("RTX_TRACE_STEPS");
  handoff.runId = env.text("RTX_RUN_ID");
  return handoff;
}
