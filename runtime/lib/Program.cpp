//===- Program.cpp - the runtime of emitted training programs -------------===//

#include "rtxrt/Program.h"

#include "rtxrt/Collectives.h"
#include "rtxrt/Npy.h"
#include "rtxrt/Random.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sys/stat.h>
#include <thread>

using namespace rtxrt;

Tensor rtxrt::randomInput(const std::string &name, int64_t seed,
                          const Shape &shape, DType dtype, int64_t bound) {
  Tensor t(shape, dtype);
  uint64_t key = randomKey(seed, "input:" + name);
  if (isFloat(dtype)) {
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setFromDouble(i, normalAt(key, i));
    return t;
  }
  if (dtype == DType::I1)
    bound = 2;
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setFromDouble(
        i, std::min<int64_t>(bound - 1,
                             static_cast<int64_t>(uniformAt(key, i) * bound)));
  return t;
}

namespace {
class LocalCommunicator : public Communicator {
public:
  std::vector<Tensor> exchange(const std::vector<int64_t> &, const Tensor &t,
                               const std::string &) override {
    return {t};
  }
};
} // namespace

std::unique_ptr<Communicator> rtxrt::makeLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

#ifndef RTXRT_HAVE_GLOO
std::unique_ptr<Communicator>
rtxrt::makeGlooCommunicator(int64_t, int64_t, const std::string &,
                            const std::vector<std::vector<int64_t>> &, double) {
  throw Error("this runtime was built without Gloo (install libgloo-dev): "
              "it runs on one rank only");
}
#endif

//===----------------------------------------------------------------------===//
// StepContext
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Communicator: collectives by exchange
//===----------------------------------------------------------------------===//

Tensor Communicator::allReduce(const std::vector<int64_t> &group, int64_t,
                               ReduceKind kind, const Tensor &t,
                               const std::string &what) {
  if (kind == ReduceKind::Sum || kind == ReduceKind::Mean) {
    if (Tensor total = sum(group, t, what); total.defined()) {
      if (kind == ReduceKind::Sum)
        return total;
      return meanOfSum(total, static_cast<int64_t>(group.size()));
    }
  }
  return reduceGroup(kind, exchange(group, t, what));
}
Tensor Communicator::allGather(const std::vector<int64_t> &group, int64_t,
                               int64_t dim, const Tensor &t,
                               const std::string &what) {
  return gatherGroup(exchange(group, t, what), dim);
}
Tensor Communicator::reduceScatter(const std::vector<int64_t> &group,
                                   int64_t index, ReduceKind kind, int64_t dim,
                                   const Tensor &t, const std::string &what) {
  return reduceScatterGroup(kind, exchange(group, t, what), dim, index);
}
Tensor Communicator::allToAll(const std::vector<int64_t> &group, int64_t index,
                              int64_t splitDim, int64_t concatDim,
                              const Tensor &t, const std::string &what) {
  return allToAllGroup(exchange(group, t, what), splitDim, concatDim, index);
}
Tensor Communicator::broadcastFrom(const std::vector<int64_t> &group, int64_t,
                                   int64_t root, const Tensor &t,
                                   const std::string &what) {
  return exchange(group, t, what).at(root);
}
Tensor Communicator::permute(const std::vector<int64_t> &group, int64_t index,
                             const std::vector<int64_t> &pairs, const Tensor &t,
                             const std::string &what) {
  return permuteGroup(exchange(group, t, what), pairs, index, t);
}

//===----------------------------------------------------------------------===//
// StepContext
//===----------------------------------------------------------------------===//

/// One worker thread running started collectives in the order they were
/// started.
struct StepContext::AsyncQueue {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::packaged_task<Tensor()>> jobs;
  int64_t unfinished = 0; // queued or running
  bool stopping = false;
  std::thread worker;

  AsyncQueue() {
    worker = std::thread([this] {
      for (;;) {
        std::packaged_task<Tensor()> job;
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [this] { return stopping || !jobs.empty(); });
          if (jobs.empty())
            return;
          job = std::move(jobs.front());
          jobs.pop_front();
        }
        job(); // an exception is stored in the job's future
        std::lock_guard<std::mutex> lock(mutex);
        --unfinished;
        changed.notify_all();
      }
    });
  }
  ~AsyncQueue() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    worker.join();
  }
  Pending push(std::packaged_task<Tensor()> job) {
    Pending result = job.get_future().share();
    std::lock_guard<std::mutex> lock(mutex);
    jobs.push_back(std::move(job));
    ++unfinished;
    changed.notify_all();
    return result;
  }
  void drain() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [this] { return unfinished == 0; });
  }
};

namespace {
/// Adds the lifetime of this object to `seconds` (time spent waiting in a
/// collective).
class CollectiveTimer {
public:
  explicit CollectiveTimer(double &seconds)
      : seconds_(seconds), start_(std::chrono::steady_clock::now()) {}
  ~CollectiveTimer() {
    seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
  }

private:
  double &seconds_;
  std::chrono::steady_clock::time_point start_;
};
} // namespace

StepContext::StepContext(int64_t rank, const MeshLayout &mesh,
                         Communicator &comm, const DeviceRuntime *device)
    : rank_(rank), mesh_(mesh), comm_(comm), device_(device) {}

StepContext::~StepContext() = default;

void StepContext::drain() {
  if (async_) {
    CollectiveTimer timer(collectiveSeconds_);
    async_->drain();
  }
}

StepContext::Pending StepContext::allReduceStart(const char *what,
                                                 const Axes &axes,
                                                 ReduceKind kind,
                                                 const Tensor &t) {
  std::string name = what;
  std::packaged_task<Tensor()> job([this, name, axes, kind, t] {
    return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
      return comm_.allReduce(group, index, kind, x, name);
    });
  });
  if (t.onGpu()) { // device work stays on the thread that owns the device
    Pending result = job.get_future().share();
    drain();
    job();
    return result;
  }
  if (!async_)
    async_ = std::make_unique<AsyncQueue>();
  return async_->push(std::move(job));
}

Tensor StepContext::wait(const Pending &pending) {
  CollectiveTimer timer(collectiveSeconds_);
  return pending.get();
}

template <typename F>
Tensor StepContext::run(const Axes &axes, const Tensor &t, F &&collective) {
  // Started all-reduces run here on the communication thread: only the
  // step's own thread counts its waiting (wait() and drain() do).
  std::optional<CollectiveTimer> timer;
  if (!async_ || std::this_thread::get_id() != async_->worker.get_id())
    timer.emplace(collectiveSeconds_);
  std::vector<int64_t> group = mesh_.group(rank_, axes);
  int64_t index = mesh_.indexInGroup(rank_, axes);
  if (!t.onGpu() || comm_.takesGpuTensors())
    return collective(group, index, t);
  if (!device_)
    throw Error("a GPU tensor reached a collective of a host program");
  return device_->toDevice(collective(group, index, device_->toHost(t)));
}

Tensor StepContext::allReduce(const char *what, const Axes &axes,
                              ReduceKind kind, const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.allReduce(group, index, kind, x, what);
  });
}
Tensor StepContext::allGather(const char *what, const Axes &axes, int64_t dim,
                              const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.allGather(group, index, dim, x, what);
  });
}
Tensor StepContext::reduceScatter(const char *what, const Axes &axes,
                                  ReduceKind kind, int64_t dim,
                                  const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.reduceScatter(group, index, kind, dim, x, what);
  });
}
Tensor StepContext::allToAll(const char *what, const Axes &axes,
                             int64_t splitDim, int64_t concatDim,
                             const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.allToAll(group, index, splitDim, concatDim, x, what);
  });
}
Tensor StepContext::broadcastFrom(const char *what, const Axes &axes,
                                  int64_t root, const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.broadcastFrom(group, index, root, x, what);
  });
}
Tensor StepContext::permute(const char *what, const Axes &axes,
                            const std::vector<int64_t> &pairs,
                            const Tensor &t) {
  drain();
  return run(axes, t, [&](const auto &group, int64_t index, const Tensor &x) {
    return comm_.permute(group, index, pairs, x, what);
  });
}
Tensor StepContext::meshSlice(const Axes &axes, int64_t dim, const Tensor &t) {
  int64_t n = mesh_.groupSize(axes), index = mesh_.indexInGroup(rank_, axes);
  if (t.onGpu()) {
    if (!device_)
      throw Error("a GPU tensor reached rtx.mesh_slice in a host program");
    return device_->sliceGroup(t, dim, n, index);
  }
  return sliceGroup(t, dim, n, index);
}

//===----------------------------------------------------------------------===//
// runProgram
//===----------------------------------------------------------------------===//

namespace {
struct Flags {
  int64_t steps = 1;
  int64_t seed = 0;
  std::string inputs, params, out, store, data, metrics, state, saveState;
  double timeout = 60;
  bool help = false;
};

Flags parseFlags(const std::string &program, int argc, char **argv) {
  Flags flags;
  if (const char *store = std::getenv("RTX_STORE"))
    flags.store = store;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg != "--help" && arg != "-h") {
      if (i + 1 >= argc)
        throw Error(arg + " needs a value (see --help)");
      value = argv[++i];
    }
    auto number = [&](const std::string &what) {
      char *end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (value.empty() || *end)
        throw Error(arg + " needs " + what + ", got '" + value + "'");
      return v;
    };
    if (arg == "--help" || arg == "-h")
      flags.help = true;
    else if (arg == "--steps") {
      flags.steps = static_cast<int64_t>(number("a number of steps"));
      if (flags.steps < 1)
        throw Error("--steps must be at least 1");
    } else if (arg == "--seed")
      flags.seed = static_cast<int64_t>(number("a number"));
    else if (arg == "--inputs")
      flags.inputs = value;
    else if (arg == "--params")
      flags.params = value;
    else if (arg == "--out")
      flags.out = value;
    else if (arg == "--store")
      flags.store = value;
    else if (arg == "--data")
      flags.data = value;
    else if (arg == "--metrics")
      flags.metrics = value;
    else if (arg == "--state")
      flags.state = value;
    else if (arg == "--save-state")
      flags.saveState = value;
    else if (arg == "--timeout")
      flags.timeout = number("seconds");
    else
      throw Error("unknown flag '" + arg + "' (see " + program + " --help)");
  }
  if (!flags.params.empty() && !flags.state.empty())
    throw Error("--params and --state both give the parameters; use one");
  return flags;
}

bool fileExists(const std::string &path) { return std::ifstream(path).good(); }

/// A token file: nanoGPT's raw uint16 tokens, or llm.c's .bin (a header of
/// 256 int32 starting with magic 20240520, version 1: uint16 tokens, or
/// version 2: uint32 tokens, the token count at index 2).
std::vector<int64_t> readTokens(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw Error("cannot open the token file " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                          std::istreambuf_iterator<char>());
  std::vector<int64_t> tokens;
  int32_t header[256] = {};
  size_t offset = 0, width = 2;
  if (bytes.size() >= sizeof header) {
    std::memcpy(header, bytes.data(), sizeof header);
    if (header[0] == 20240520) {
      if (header[1] != 1 && header[1] != 2)
        throw Error("token file " + path + ": unknown llm.c version " +
                    std::to_string(header[1]));
      offset = sizeof header;
      width = header[1] == 1 ? 2 : 4;
    }
  }
  if ((bytes.size() - offset) % width != 0)
    throw Error("token file " + path + ": its size is not a whole number of " +
                std::to_string(width) + "-byte tokens");
  for (size_t i = offset; i + width <= bytes.size(); i += width) {
    uint32_t token = 0;
    std::memcpy(&token, bytes.data() + i, width);
    tokens.push_back(token);
  }
  return tokens;
}

/// --metrics FILE: one JSON object per line and step, written by rank 0
/// (the names of design.md's metrics). Non-finite numbers are written as
/// null, which JSON can hold.
class MetricsFile {
public:
  explicit MetricsFile(const std::string &path) {
    if (path.empty())
      return;
    file_ = std::fopen(path.c_str(), "w");
    if (!file_)
      throw Error("cannot write the metrics file " + path + ": " +
                  std::strerror(errno));
  }
  ~MetricsFile() {
    if (file_)
      std::fclose(file_);
  }
  MetricsFile(const MetricsFile &) = delete;
  MetricsFile &operator=(const MetricsFile &) = delete;

  void step(int64_t step, bool hasLoss, double loss, double ms,
            double tokensPerSecond, double collectiveMs) {
    if (!file_)
      return;
    std::fprintf(
        file_,
        "{\"step\": %lld, \"loss\": %s, \"step_time_ms\": %s, "
        "\"tokens_per_s\": %s, \"collective_ms\": %s, "
        "\"collective_pct\": %s}\n",
        static_cast<long long>(step),
        number(hasLoss ? loss : std::nan(""), "%.9g").c_str(),
        number(ms, "%.3f").c_str(), number(tokensPerSecond, "%.1f").c_str(),
        number(collectiveMs, "%.3f").c_str(),
        number(ms > 0 ? 100.0 * collectiveMs / ms : std::nan(""), "%.2f")
            .c_str());
    std::fflush(file_); // a run that dies keeps the steps it finished
  }

private:
  static std::string number(double value, const char *format) {
    if (!std::isfinite(value))
      return "null";
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
  }
  std::FILE *file_ = nullptr;
};

int64_t envInt(const char *name, int64_t fallback) {
  const char *value = std::getenv(name);
  return value ? std::atoll(value) : fallback;
}
} // namespace

int rtxrt::runProgram(const ProgramSpec &spec, int argc, char **argv) {
  int64_t rank = envInt("RANK", 0), world = envInt("WORLD_SIZE", 1);
  try {
    Flags flags = parseFlags(argv[0], argc, argv);
    if (flags.help) {
      std::printf(
          "%s: a training program compiled by rtx for %lld rank(s)\n"
          "  --steps N          training steps (default 1)\n"
          "  --inputs DIR       data: DIR/NAME.npy (global shapes); missing "
          "inputs are drawn with --seed\n"
          "  --params DIR       initial parameters: DIR/NAME.npy (else their "
          "initializers)\n"
          "  --out DIR          write the final results as DIR/resultN.npy "
          "(rank 0)\n"
          "  --data FILE.bin    token file (nanoGPT uint16, or llm.c with its "
          "header):\n"
          "                     each step reads the next batch of windows into "
          "'tokens' and\n"
          "                     'labels' (the same windows shifted by one)\n"
          "  --seed S           seed of drawn inputs (default 0)\n"
          "  --store file:DIR   rendezvous (default $RTX_STORE); rank and "
          "size from RANK/WORLD_SIZE\n"
          "  --timeout S        seconds a collective may wait (default 60)\n"
          "  --metrics FILE     rank 0 writes one JSON line per step: step, "
          "loss,\n"
          "                     step_time_ms, tokens_per_s, collective_ms, "
          "collective_pct\n"
          "  --save-state DIR   at the end, write the parameters and optimizer "
          "state as\n"
          "                     DIR/KEY.npy (KEY: param:NAME, exp_avg:NAME, "
          "..., step)\n"
          "  --state DIR        start from a --save-state directory (training "
          "continues\n"
          "                     where that run stopped)\n",
          argv[0], static_cast<long long>(spec.mesh.numRanks()));
      return 0;
    }
    if (world != spec.mesh.numRanks())
      throw Error("this program was compiled for " +
                  std::to_string(spec.mesh.numRanks()) +
                  " ranks, but WORLD_SIZE is " + std::to_string(world) +
                  " (start it with rtx-launch -n " +
                  std::to_string(spec.mesh.numRanks()) + ")");
    if (rank < 0 || rank >= world)
      throw Error("RANK " + std::to_string(rank) + " is outside [0, " +
                  std::to_string(world) + ")");

    const DeviceRuntime *device = spec.device;
    if (device) {
      std::string name = device->selectDevice(envInt("LOCAL_RANK", rank));
      if (rank == 0)
        std::printf("device: %s (%s)\n", name.c_str(), device->name);
    }
    auto onDevice = [&](const Tensor &t) {
      return device ? device->toDevice(t) : t;
    };
    auto onHost = [&](const Tensor &t) {
      return device ? device->toHost(t) : t;
    };

    // Process groups: every group a collective uses, plus the world (to
    // assemble the loss and results), created eagerly in one order.
    std::unique_ptr<Communicator> comm;
    std::vector<int64_t> everyone;
    for (int64_t r = 0; r < world; ++r)
      everyone.push_back(r);
    if (world == 1) {
      comm = makeLocalCommunicator();
    } else {
      if (flags.store.empty())
        throw Error("several ranks need a rendezvous store: pass --store "
                    "file:DIR or set RTX_STORE (rtx-launch --store does)");
      std::vector<std::vector<int64_t>> groups;
      for (const auto &axes : spec.collectiveAxes)
        groups.push_back(spec.mesh.group(rank, axes));
      groups.push_back(everyone);
      comm = device && device->makeCommunicator
                 ? device->makeCommunicator(rank, world, flags.store, groups,
                                            flags.timeout)
                 : makeGlooCommunicator(rank, world, flags.store, groups,
                                        flags.timeout);
    }

    // Arguments: parameters from --state, --params or their initializers,
    // optimizer state from --state or zeroed, data from --inputs or drawn.
    std::map<std::string, size_t> argOfState;
    std::vector<Tensor> args;
    for (size_t i = 0; i < spec.args.size(); ++i) {
      const ArgSpec &arg = spec.args[i];
      LocalBlock block = localBlock(arg.sharding, arg.shape, spec.mesh, rank);
      // This rank's block of the global tensor in `path`, which must have
      // the global shape.
      auto readBlock = [&](const std::string &path, const std::string &what) {
        Tensor global = readNpy(path);
        if (global.shape() != block.globalShape)
          throw Error(what + " in " + path + " has shape " +
                      shapeToString(global.shape()) + ", the program expects " +
                      shapeToString(block.globalShape));
        return sliceBlock(global.to(arg.dtype), arg.shape, block.offsets);
      };
      auto stateFile = [&](const std::string &key) {
        return stateFilePath(flags.state, key);
      };
      switch (arg.kind) {
      case ArgSpec::Param: {
        std::string path = flags.params + "/" + arg.name + ".npy";
        if (!flags.state.empty()) {
          args.push_back(readBlock(stateFile("param:" + arg.name),
                                   "parameter '" + arg.name + "'"));
        } else if (!flags.params.empty() && fileExists(path)) {
          args.push_back(readBlock(path, "parameter '" + arg.name + "'"));
        } else {
          args.push_back(initParameter(arg.name, arg.init, arg.a, arg.b,
                                       arg.seed, arg.shape, arg.dtype,
                                       block.globalShape, block.offsets));
        }
        argOfState["param:" + arg.name] = i;
        break;
      }
      case ArgSpec::State:
        args.push_back(flags.state.empty()
                           ? Tensor(arg.shape, arg.dtype)
                           : readBlock(stateFile(arg.name),
                                       "optimizer state '" + arg.name + "'"));
        argOfState[arg.name] = i;
        break;
      case ArgSpec::Input: {
        std::string path = flags.inputs + "/" + arg.name + ".npy";
        Tensor global;
        if (!flags.inputs.empty() && fileExists(path)) {
          global = readNpy(path);
          if (global.shape() != block.globalShape)
            throw Error("input '" + arg.name + "' in " + path + " has shape " +
                        shapeToString(global.shape()) +
                        ", the program expects " +
                        shapeToString(block.globalShape));
          global = global.to(arg.dtype);
        } else if (!flags.inputs.empty()) {
          throw Error("missing input '" + arg.name + "': expected " + path +
                      " of shape " + shapeToString(block.globalShape));
        } else {
          global = randomInput(arg.name, flags.seed, block.globalShape,
                               arg.dtype, arg.bound);
        }
        args.push_back(sliceBlock(global, arg.shape, block.offsets));
        break;
      }
      }
    }

    // A token file feeds `tokens` and `labels` ([batch, seq]) step by step:
    // batch row b of step t is the window at ((t * batch + b) * seq) modulo
    // the file, and labels are the tokens shifted by one (nanoGPT).
    std::vector<int64_t> fileTokens;
    int64_t tokensArg = -1, labelsArg = -1;
    if (!flags.data.empty()) {
      fileTokens = readTokens(flags.data);
      for (size_t i = 0; i < spec.args.size(); ++i) {
        if (spec.args[i].kind != ArgSpec::Input)
          continue;
        if (spec.args[i].name == "tokens")
          tokensArg = i;
        if (spec.args[i].name == "labels")
          labelsArg = i;
      }
      if (tokensArg < 0 || labelsArg < 0)
        throw Error("--data needs inputs named 'tokens' and 'labels'; this "
                    "program has other inputs");
    }
    auto loadBatch = [&](int64_t step) {
      const ArgSpec &spec0 = spec.args[tokensArg];
      LocalBlock block =
          localBlock(spec0.sharding, spec0.shape, spec.mesh, rank);
      if (block.globalShape.size() != 2)
        throw Error("--data needs [batch, seq] tokens, got " +
                    shapeToString(block.globalShape));
      int64_t batch = block.globalShape[0], seq = block.globalShape[1];
      int64_t n = static_cast<int64_t>(fileTokens.size());
      if (n < seq + 1)
        throw Error("token file " + flags.data + " holds " + std::to_string(n) +
                    " tokens; a window needs " + std::to_string(seq + 1));
      Tensor tokens(block.globalShape, spec0.dtype);
      Tensor labels(block.globalShape, spec.args[labelsArg].dtype);
      for (int64_t b = 0; b < batch; ++b) {
        int64_t start = ((step * batch + b) * seq) % (n - seq);
        for (int64_t t = 0; t < seq; ++t) {
          tokens.setFromDouble(b * seq + t, fileTokens[start + t]);
          labels.setFromDouble(b * seq + t, fileTokens[start + t + 1]);
        }
      }
      args[tokensArg] =
          onDevice(sliceBlock(tokens, spec0.shape, block.offsets));
      args[labelsArg] = onDevice(
          sliceBlock(labels, spec.args[labelsArg].shape,
                     localBlock(spec.args[labelsArg].sharding,
                                spec.args[labelsArg].shape, spec.mesh, rank)
                         .offsets));
    };

    // Tokens per step, for the throughput figure: the global size of the
    // input named 'tokens', when there is one.
    int64_t tokensPerStep = 0;
    for (const ArgSpec &arg : spec.args)
      if (arg.kind == ArgSpec::Input && arg.name == "tokens")
        tokensPerStep = numElements(
            localBlock(arg.sharding, arg.shape, spec.mesh, rank).globalShape);
    for (Tensor &arg : args)
      arg = onDevice(arg);

    StepContext context(rank, spec.mesh, *comm, device);
    std::vector<Tensor> results;
    // Sums the canonical replicas' values of a scalar across all ranks.
    auto globalScalar = [&](const Tensor &local, const Sharding &sharding) {
      std::vector<Tensor> all =
          comm->exchange(everyone, onHost(local), "the loss of the step");
      double value = 0;
      for (int64_t r = 0; r < world; ++r)
        if (isCanonicalReplica(sharding, spec.mesh, r))
          value += all[r].getAsDouble(0);
      return value;
    };
    // Steps that the runs behind --state have done: a token file is read on
    // from where they stopped.
    int64_t stepsBefore = 0;
    if (!flags.state.empty()) {
      std::ifstream done(flags.state + "/steps_done");
      if (!(done >> stepsBefore) || stepsBefore < 0)
        throw Error("--state " + flags.state +
                    " lacks a valid steps_done (written by --save-state)");
    }
    MetricsFile metrics(rank == 0 ? flags.metrics : std::string());
    double totalMs = 0, totalCollectiveMs = 0;
    auto start = std::chrono::steady_clock::now();
    for (int64_t step = 1; step <= flags.steps; ++step) {
      if (!fileTokens.empty())
        loadBatch(stepsBefore + step - 1);
      auto stepStart = std::chrono::steady_clock::now();
      results = spec.step(context, args);
      context.drain();
      if (device)
        device->synchronize(); // the step's time includes its queued kernels
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - stepStart)
                      .count();
      double collectiveMs = context.takeCollectiveSeconds() * 1000.0;
      totalMs += ms;
      totalCollectiveMs += collectiveMs;
      double loss = std::nan("");
      if (spec.lossResult >= 0)
        loss = globalScalar(results[spec.lossResult],
                            spec.results[spec.lossResult].sharding);
      metrics.step(step, spec.lossResult >= 0, loss, ms,
                   tokensPerStep > 0 && ms > 0 ? tokensPerStep * 1000.0 / ms
                                               : std::nan(""),
                   collectiveMs);
      if (spec.lossResult >= 0) {
        if (rank == 0) {
          std::printf("step %lld/%lld: loss=%.6e time=%.1fms",
                      static_cast<long long>(step),
                      static_cast<long long>(flags.steps), loss, ms);
          if (tokensPerStep > 0 && ms > 0)
            std::printf(" tokens/s=%.0f", tokensPerStep * 1000.0 / ms);
          std::printf("\n");
        }
        std::fflush(stdout);
      }
      for (size_t i = 0; i < results.size(); ++i) {
        auto it = argOfState.find(spec.results[i].state);
        if (!spec.results[i].state.empty() && it != argOfState.end())
          args[it->second] = results[i];
      }
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (rank == 0) {
      std::printf("done: %lld step(s) in %.3f s",
                  static_cast<long long>(flags.steps), seconds);
      if (tokensPerStep > 0 && seconds > 0)
        std::printf(", %.0f tokens/s",
                    tokensPerStep * static_cast<double>(flags.steps) / seconds);
      if (world > 1 && totalMs > 0)
        std::printf(", %.1f%% of the step time waiting in collectives (rank 0)",
                    100.0 * totalCollectiveMs / totalMs);
      std::printf("\n");
    }

    // Final results, reassembled on rank 0: all of them by index (--out),
    // and those that carry state by their key (--save-state).
    if (!flags.out.empty() || !flags.saveState.empty()) {
      if (rank == 0) {
        for (const std::string &dir : {flags.out, flags.saveState})
          if (!dir.empty() && mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
            throw Error("cannot create " + dir + ": " + std::strerror(errno));
      }
      for (size_t i = 0; i < results.size(); ++i) {
        const ResultSpec &result = spec.results[i];
        bool saveState = !flags.saveState.empty() && !result.state.empty();
        if (flags.out.empty() && !saveState)
          continue;
        std::vector<Tensor> all =
            comm->exchange(everyone, onHost(results[i]), "writing the results");
        if (rank != 0)
          continue;
        Tensor global(
            localBlock(result.sharding, result.shape, spec.mesh, 0).globalShape,
            results[i].dtype());
        for (int64_t r = 0; r < world; ++r)
          if (isCanonicalReplica(result.sharding, spec.mesh, r))
            accumulateBlock(
                global, all[r],
                localBlock(result.sharding, result.shape, spec.mesh, r)
                    .offsets);
        if (!flags.out.empty())
          writeNpy(flags.out + "/result" + std::to_string(i) + ".npy", global);
        if (saveState) {
          // Written aside, then renamed: a run that dies while saving
          // leaves the previous file whole.
          std::string path = flags.saveState + "/" + result.state + ".npy";
          writeNpy(path + ".partial", global);
          if (std::rename((path + ".partial").c_str(), path.c_str()) != 0)
            throw Error("cannot write " + path + ": " + std::strerror(errno));
        }
      }
      if (rank == 0 && !flags.saveState.empty()) {
        // Last, so that a directory with it holds a whole state.
        std::string path = flags.saveState + "/steps_done";
        {
          std::ofstream done(path + ".partial");
          done << stepsBefore + flags.steps << "\n";
          if (!done.flush())
            throw Error("cannot write " + path);
        }
        if (std::rename((path + ".partial").c_str(), path.c_str()) != 0)
          throw Error("cannot write " + path + ": " + std::strerror(errno));
      }
    }
    return 0;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "%s: rank %lld: error: %s\n", spec.name.c_str(),
                 static_cast<long long>(rank), error.what());
    return 1;
  }
}
