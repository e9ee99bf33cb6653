//===- LaunchEnvironmentTest.cpp - launchers' variables and bind address --===//
//
// rtxrt::readLaunchEnvironment against the variables torchrun, Slurm's srun
// and Open MPI's mpirun set (copied from what each sets for the second of
// two processes), the refusals of garbage and contradictions, Slurm's host
// lists, and the address Gloo binds to.
//
//===----------------------------------------------------------------------===//

#include "rtxrt/elastic/LaunchEnvironment.h"
#include "BindAddress.h"
#include "rtxrt/core/Tensor.h"

#include <gtest/gtest.h>

#include <map>

using namespace rtxrt;

namespace {

using Vars = std::map<std::string, std::string>;

EnvironmentLookup lookup(const Vars &vars) {
  return [vars](const std::string &name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

LaunchEnvironment read(const Vars &vars) {
  return readLaunchEnvironment(lookup(vars));
}

/// The message readLaunchEnvironment throws for `vars` ("" if none).
std::string refusal(const Vars &vars) {
  try {
    read(vars);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

TEST(LaunchEnvironment, NoLauncherIsOneProcess) {
  LaunchEnvironment launch = read({});
  EXPECT_EQ(launch.launcher, "none");
  EXPECT_EQ(launch.rank, 0);
  EXPECT_EQ(launch.world, 1);
  EXPECT_TRUE(launch.singleNode());
  EXPECT_TRUE(launch.store.empty());
}

TEST(LaunchEnvironment, Torchrun) {
  LaunchEnvironment launch = read({{"RANK", "3"},
                                   {"WORLD_SIZE", "8"},
                                   {"LOCAL_RANK", "1"},
                                   {"LOCAL_WORLD_SIZE", "2"},
                                   {"GROUP_RANK", "1"},
                                   {"NNODES", "4"},
                                   {"MASTER_ADDR", "node01"},
                                   {"MASTER_PORT", "29500"},
                                   {"TORCHELASTIC_RUN_ID", "abc"}});
  EXPECT_EQ(launch.launcher, "torchrun");
  EXPECT_EQ(launch.rank, 3);
  EXPECT_EQ(launch.world, 8);
  EXPECT_EQ(launch.localRank, 1);
  EXPECT_EQ(launch.localWorld, 2);
  EXPECT_EQ(launch.node, 1);
  EXPECT_EQ(launch.nodes, 4);
  EXPECT_EQ(launch.masterAddr, "node01");
  EXPECT_EQ(launch.masterPort, 29500);
  EXPECT_FALSE(launch.singleNode());
  // MASTER_PORT is torchrun's TCPStore: not a redis store.
  EXPECT_TRUE(launch.store.empty());
  EXPECT_EQ(launch.runId.rfind("torchrun-abc-", 0), 0u);
}

TEST(LaunchEnvironment, TorchrunOnOneNodeGetsAFileStore) {
  LaunchEnvironment launch = read({{"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {"LOCAL_RANK", "1"},
                                   {"LOCAL_WORLD_SIZE", "2"},
                                   {"TORCHELASTIC_RUN_ID", "none"}});
  EXPECT_TRUE(launch.singleNode());
  EXPECT_EQ(launch.store, "file:/tmp/rtx-store-" + launch.runId);
}

TEST(LaunchEnvironment, RtxLaunchAndExplicitStore) {
  LaunchEnvironment launch =
      read({{"RANK", "1"},
            {"WORLD_SIZE", "2"},
            {"LOCAL_RANK", "1"},
            {"LOCAL_WORLD_SIZE", "2"},
            {"RTX_LAUNCHER", "rtx-launch"},
            {"RTX_STORE", "file:/x"},
            {"RTX_RUN_ID", "r7"},
            // An outer srun's variables are the launcher's, not this rank's.
            {"SLURM_PROCID", "0"},
            {"SLURM_NTASKS", "1"}});
  EXPECT_EQ(launch.launcher, "rtx-launch");
  EXPECT_EQ(launch.rank, 1);
  EXPECT_EQ(launch.store, "file:/x");
  EXPECT_EQ(launch.storeSource, "RTX_STORE");
  EXPECT_EQ(launch.runId, "r7");
}

TEST(LaunchEnvironment, Slurm) {
  LaunchEnvironment launch = read({{"SLURM_PROCID", "5"},
                                   {"SLURM_NTASKS", "6"},
                                   {"SLURM_LOCALID", "1"},
                                   {"SLURM_NODEID", "2"},
                                   {"SLURM_NNODES", "3"},
                                   {"SLURM_TASKS_PER_NODE", "2(x3)"},
                                   {"SLURM_JOB_NODELIST", "gpu[07-09]"},
                                   {"SLURM_JOB_ID", "42"},
                                   {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(launch.launcher, "slurm");
  EXPECT_EQ(launch.rank, 5);
  EXPECT_EQ(launch.world, 6);
  EXPECT_EQ(launch.localRank, 1);
  EXPECT_EQ(launch.localWorld, 2);
  EXPECT_EQ(launch.node, 2);
  EXPECT_EQ(launch.nodes, 3);
  EXPECT_EQ(launch.masterAddr, "gpu07");
  EXPECT_EQ(launch.runId, "slurm-42.0");
  EXPECT_TRUE(launch.store.empty());
  // A script that started redis on the first host names its port.
  Vars withPort = {{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "2"},
                   {"SLURM_NNODES", "2"},
                   {"SLURM_JOB_NODELIST", "n[1-2]"},
                   {"MASTER_PORT", "6379"}};
  EXPECT_EQ(read(withPort).store, "redis://n1:6379");
  EXPECT_EQ(read(withPort).storeSource, "MASTER_ADDR/MASTER_PORT");
}

TEST(LaunchEnvironment, SlurmUnevenTasksPerNode) {
  Vars vars = {{"SLURM_PROCID", "4"},  {"SLURM_NTASKS", "5"},
               {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "2"},
               {"SLURM_NNODES", "3"},  {"SLURM_TASKS_PER_NODE", "2(x2),1"}};
  EXPECT_EQ(read(vars).localWorld, 1);
}

TEST(LaunchEnvironment, OpenMpi) {
  LaunchEnvironment launch = read({{"OMPI_COMM_WORLD_RANK", "1"},
                                   {"OMPI_COMM_WORLD_SIZE", "2"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                   {"OMPI_MCA_ess_base_jobid", "1863974913"}});
  EXPECT_EQ(launch.launcher, "mpirun");
  EXPECT_EQ(launch.rank, 1);
  EXPECT_EQ(launch.world, 2);
  EXPECT_EQ(launch.localRank, 1);
  EXPECT_TRUE(launch.singleNode());
  EXPECT_EQ(launch.runId, "mpirun-1863974913");
  EXPECT_EQ(launch.store, "file:/tmp/rtx-store-mpirun-1863974913");
}

TEST(LaunchEnvironment, GarbageAndContradictionsNameTheVariable) {
  EXPECT_EQ(refusal({{"RANK", "x"}, {"WORLD_SIZE", "2"}}),
            "RANK='x' is not a non-negative integer (set by the launcher)");
  EXPECT_EQ(refusal({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}),
            "RANK='-1' is not a non-negative integer (set by the launcher)");
  EXPECT_EQ(refusal({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
            "RANK=2 is outside [0, 2) given by WORLD_SIZE=2");
  EXPECT_EQ(refusal({{"RANK", "0"}}),
            "RANK is set but WORLD_SIZE is not: a launcher sets both");
  EXPECT_EQ(refusal({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
            "WORLD_SIZE=0 must be at least 1");
  EXPECT_EQ(
      refusal({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "4"}}),
      "LOCAL_WORLD_SIZE=4 exceeds WORLD_SIZE=2");
  EXPECT_EQ(refusal({{"RANK", "0"},
                     {"WORLD_SIZE", "2"},
                     {"LOCAL_RANK", "2"},
                     {"LOCAL_WORLD_SIZE", "2"}}),
            "LOCAL_RANK=2 is outside [0, 2) given by LOCAL_WORLD_SIZE=2");
  EXPECT_EQ(refusal({{"RANK", "0"},
                     {"WORLD_SIZE", "2"},
                     {"MASTER_PORT", "99999"},
                     {"MASTER_ADDR", "h"}}),
            "MASTER_PORT=99999 is not a TCP port (1-65535)");
  EXPECT_EQ(refusal({{"OMPI_COMM_WORLD_RANK", "0"},
                     {"OMPI_COMM_WORLD_SIZE", "2"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}}),
            "OMPI_COMM_WORLD_LOCAL_SIZE=3 exceeds OMPI_COMM_WORLD_SIZE=2");
  EXPECT_EQ(refusal({{"SLURM_PROCID", "0"}}),
            "SLURM_PROCID is set but SLURM_NTASKS is not (start the program "
            "with srun)");
  EXPECT_EQ(refusal({{"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "2"},
                     {"SLURM_NNODES", "2"},
                     {"SLURM_JOB_NODELIST", "n1"}}),
            "SLURM_JOB_NODELIST='n1' names 1 host(s), but SLURM_NNODES is 2");
  EXPECT_EQ(refusal({{"RTX_STORE", "tcp://h:1"}}),
            "RTX_STORE='tcp://h:1' is not file:DIR or redis://HOST:PORT");
}

TEST(LaunchEnvironment, DeviceLists) {
  Vars vars = {{"RANK", "1"},
               {"WORLD_SIZE", "2"},
               {"LOCAL_RANK", "1"},
               {"LOCAL_WORLD_SIZE", "2"},
               {"RTX_DEVICES", "cuda:3,cuda:5"}};
  LaunchEnvironment launch = read(vars);
  EXPECT_TRUE(launch.device.listed);
  EXPECT_EQ(launch.device.kind, "cuda");
  EXPECT_EQ(launch.device.index, 5);
  vars["RTX_DEVICES"] = "3,5";
  EXPECT_EQ(read(vars).device.index, 5);
  vars["RTX_DEVICE"] = "cuda:7"; // this process's own device wins
  EXPECT_EQ(read(vars).device.index, 7);
  vars.erase("RTX_DEVICE");
  vars["RTX_DEVICES"] = "cpu,cpu";
  EXPECT_EQ(read(vars).device.kind, "cpu");
  vars["RTX_DEVICES"] = "cuda:3";
  EXPECT_EQ(refusal(vars), "RTX_DEVICES='cuda:3' lists 1 device(s), but this "
                           "process is local rank 1: list one device per "
                           "rank of the node");
  vars["RTX_DEVICES"] = "cuda:3,cuda:3";
  EXPECT_EQ(refusal(vars), "RTX_DEVICES='cuda:3,cuda:3' names cuda:3 twice");
  vars["RTX_DEVICES"] = "cuda:3,gpu1";
  EXPECT_EQ(refusal(vars),
            "RTX_DEVICES: 'gpu1' is not a device (cpu, cuda:N or N)");
}

TEST(HostList, ExpandsSlurmRanges) {
  EXPECT_EQ(expandHostList("node[01-04,07]"),
            (std::vector<std::string>{"node01", "node02", "node03", "node04",
                                      "node07"}));
  EXPECT_EQ(expandHostList("a,b[8-10]-ib,c"),
            (std::vector<std::string>{"a", "b8-ib", "b9-ib", "b10-ib", "c"}));
  EXPECT_EQ(expandHostList("n[08-10]"),
            (std::vector<std::string>{"n08", "n09", "n10"}));
  EXPECT_EQ(expandHostList("single"), (std::vector<std::string>{"single"}));
  for (const char *bad : {"n[1-", "n[3-1]", "n[a]", "a,,b", "a,", "n[1]x[2]"})
    EXPECT_THROW(expandHostList(bad), Error) << bad;
}

TEST(BindAddress, FromTheEnvironment) {
  using detail::bindAddress;
  std::vector<detail::InterfaceAddress> interfaces = {
      {"lo", "127.0.0.1", false},
      {"eth1", "fe80::1", true},
      {"eth1", "10.0.0.5", false},
      {"ib0", "fd00::7", true}};
  LaunchEnvironment oneNode =
      read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
  LaunchEnvironment twoNodes =
      read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "1"}});
  EXPECT_EQ(bindAddress(oneNode, lookup({}), interfaces), "127.0.0.1");
  EXPECT_EQ(bindAddress(twoNodes, lookup({{"RTX_SOCKET_IFNAME", "eth1"}}),
                        interfaces),
            "10.0.0.5");
  EXPECT_EQ(bindAddress(twoNodes, lookup({{"GLOO_SOCKET_IFNAME", "ib0,eth1"}}),
                        interfaces),
            "fd00::7");
  // RTX_SOCKET_IFNAME wins over GLOO_SOCKET_IFNAME, RTX_BIND_ADDR over both.
  EXPECT_EQ(bindAddress(twoNodes,
                        lookup({{"RTX_SOCKET_IFNAME", "eth1"},
                                {"GLOO_SOCKET_IFNAME", "ib0"}}),
                        interfaces),
            "10.0.0.5");
  EXPECT_EQ(bindAddress(twoNodes,
                        lookup({{"RTX_BIND_ADDR", "127.0.0.1"},
                                {"RTX_SOCKET_IFNAME", "eth1"}}),
                        interfaces),
            "127.0.0.1");
  // An interface named on one node is used even when all ranks are local.
  EXPECT_EQ(
      bindAddress(oneNode, lookup({{"RTX_SOCKET_IFNAME", "eth1"}}), interfaces),
      "10.0.0.5");
  try {
    bindAddress(twoNodes, lookup({{"RTX_SOCKET_IFNAME", "eth9"}}), interfaces);
    ADD_FAILURE() << "eth9 accepted";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "RTX_SOCKET_IFNAME='eth9': no such interface is up (interfaces "
              "with an address: lo, eth1, ib0)");
  }
  EXPECT_THROW(
      bindAddress(twoNodes, lookup({{"RTX_BIND_ADDR", ""}}), interfaces),
      Error);
}

} // namespace

namespace {

/// The environment a child of rtx-launch gets from `handoff`.
Vars childEnvironment(const LaunchHandoff &handoff) {
  Vars vars;
  for (const auto &[name, value] : handoff.variables())
    vars[name] = value;
  return vars;
}

} // namespace

TEST(LaunchHandoff, TheProgramReadsBackWhatTheLauncherHanded) {
  LaunchHandoff handoff;
  handoff.rank = 5;
  handoff.world = 8;
  handoff.localRank = 1;
  handoff.localWorld = 4;
  handoff.restartRound = 2;
  handoff.inJob = true;
  handoff.recoverEpoch = 3;
  handoff.store = "file:/tmp/s";
  handoff.devices = "cpu,cpu,cpu,cpu";
  handoff.trace = "/tmp/t";
  handoff.traceSteps = "2:4";
  handoff.runId = "job-round2";
  Vars vars = childEnvironment(handoff);
  EXPECT_EQ(vars.size(), 13u); // every variable of the documented table
  EXPECT_EQ(vars["RANK"], "5");
  EXPECT_EQ(vars["RTX_RECOVER"], "in-job");
  EXPECT_EQ(vars["RTX_LAUNCHER"], "rtx-launch");
  LaunchHandoff back = readLaunchHandoff(lookup(vars));
  EXPECT_EQ(back.rank, 5);
  EXPECT_EQ(back.world, 8);
  EXPECT_EQ(back.localRank, 1);
  EXPECT_EQ(back.localWorld, 4);
  EXPECT_EQ(back.restartRound, 2);
  EXPECT_TRUE(back.inJob);
  EXPECT_EQ(back.recoverEpoch, 3);
  EXPECT_EQ(back.store, "file:/tmp/s");
  EXPECT_EQ(back.devices, "cpu,cpu,cpu,cpu");
  EXPECT_EQ(back.launcher, "rtx-launch");
  EXPECT_EQ(back.trace, "/tmp/t");
  EXPECT_EQ(back.traceSteps, "2:4");
  EXPECT_EQ(back.runId, "job-round2");
  // The launch environment agrees on the placement.
  LaunchEnvironment launch = read(vars);
  EXPECT_EQ(launch.launcher, "rtx-launch");
  EXPECT_EQ(launch.rank, 5);
  EXPECT_EQ(launch.store, "file:/tmp/s");
  EXPECT_EQ(launch.runId, "job-round2");
}

TEST(LaunchHandoff, WhatIsNotGivenIsNotSet) {
  LaunchHandoff handoff; // no store, devices, trace; restart recovery
  handoff.runId = "r";
  Vars vars = childEnvironment(handoff);
  for (const char *unset : {"RTX_RECOVER", "RTX_RECOVER_EPOCH", "RTX_STORE",
                            "RTX_DEVICES", "RTX_TRACE", "RTX_TRACE_STEPS"})
    EXPECT_EQ(vars.count(unset), 0u) << unset;
  handoff.traceSteps = "1:2"; // steps without a trace directory: not set
  EXPECT_EQ(childEnvironment(handoff).count("RTX_TRACE_STEPS"), 0u);
}

TEST(LaunchHandoff, MalformedValuesNameTheVariable) {
  auto refusalOf = [](const Vars &vars) -> std::string {
    try {
      readLaunchHandoff(lookup(vars));
    } catch (const Error &error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(refusalOf({{"RTX_RECOVER", "sometimes"}}).find("RTX_RECOVER"),
            std::string::npos);
  EXPECT_NE(refusalOf({{"RTX_RECOVER_EPOCH", "x"}}).find("RTX_RECOVER_EPOCH"),
            std::string::npos);
  EXPECT_NE(refusalOf({{"RTX_RESTART_ROUND", "-1"}}).find("RTX_RESTART_ROUND"),
            std::string::npos);
  EXPECT_EQ(refusalOf({}), "");
}
