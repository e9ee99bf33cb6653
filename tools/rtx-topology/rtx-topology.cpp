//===- rtx-topology.cpp - write the hardware profile of this machine ------===//
//
//   rtx-topology [-o FILE] [--cpu-ranks N] [--threads-per-rank N]
//                [--nvidia-smi-topo FILE] [--nvidia-smi-query FILE]
//
// Writes the hardware profile (schema "rtx-hardware-profile/1") that rtx's
// planner reads: the device, how many per node, the link classes between
// them and between nodes (docs/topology.md). Where there are NVIDIA GPUs
// (nvidia-smi on PATH and answering), the devices are the GPUs and their
// links come from `nvidia-smi topo -m`; otherwise the devices are CPU ranks
// sharing this machine. CPU sockets, NUMA nodes and cores come from hwloc,
// network interfaces from /sys/class/net and /sys/class/infiniband.
//
// Figures that need measuring (bandwidths, efficiency) are datasheet values
// or stated estimates here; rtx-calibrate measures and overwrites them.
//
// --nvidia-smi-topo and --nvidia-smi-query are for tests: they read what
// `nvidia-smi topo -m` and `nvidia-smi --query-gpu=name,memory.total
// --format=csv,noheader,nounits` would print from files, and nvidia-smi is
// then not run at all, so a fixture gives the same profile on any machine.
//
//===----------------------------------------------------------------------===//

#include "DeviceFigures.h"
#include "NvidiaSmiTopo.h"

#include <hwloc.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace rtx::topology;
using Json = nlohmann::ordered_json;

namespace {

//===----------------------------------------------------------------------===//
// Small utilities
//===----------------------------------------------------------------------===//

void warn(const std::string &message) {
  std::fprintf(stderr, "rtx-topology: warning: %s\n", message.c_str());
}

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "rtx-topology: error: %s\n", message.c_str());
  std::exit(1);
}

bool readFile(const std::string &path, std::string &text) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream s;
  s << in.rdbuf();
  text = s.str();
  return !in.bad();
}

/// The first line of a small sysfs/procfs file, trimmed; "" when absent.
std::string readLine(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line))
    return "";
  while (!line.empty() && std::isspace((unsigned char)line.back()))
    line.pop_back();
  return line;
}

std::vector<std::string> listDir(const std::string &path) {
  std::vector<std::string> names;
  if (DIR *dir = opendir(path.c_str())) {
    while (dirent *entry = readdir(dir))
      if (entry->d_name[0] != '.')
        names.push_back(entry->d_name);
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool onPath(const std::string &program) {
  const char *path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0)
      return true;
  return false;
}

/// Runs a shell command and returns its stdout; false when it cannot be
/// started or exits non-zero (nvidia-smi without a driver exits 9).
bool runCommand(const std::string &command, std::string &output) {
  FILE *pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (!pipe)
    return false;
  output.clear();
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
    output.append(buffer, n);
  int status = pclose(pipe);
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace((unsigned char)s.back()))
    s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace((unsigned char)s[b]))
    ++b;
  return s.substr(b);
}

std::string formatGiB(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return text;
}

std::string plural(long n, const std::string &word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

//===----------------------------------------------------------------------===//
// Link figures
//===----------------------------------------------------------------------===//
//
// Nominal rates are what a link signals; collectives move less. The betas
// below are the share of the nominal rate that NCCL and Gloo benchmarks
// sustain (nccl-tests' bus bandwidth: about 230 of 300 GB/s over NVSwitch on
// a DGX A100, 360 of 450 on a DGX H100; 22 of 31.5 GB/s over PCIe 4.0 x16),
// and the alphas the cost of one message; the built-in profiles of
// lib/Analysis/profiles use the same figures. rtx-calibrate replaces them
// with this machine's measurements.

/// NVLink and NVSwitch: 80% of the links' nominal rate.
constexpr double kNvlinkShare = 0.8, kNvlinkAlphaS = 5e-6;
/// PCIe peer-to-peer: 70% of the link (packet headers, flow control).
constexpr double kPcieShare = 0.7, kPcieAlphaS = 10e-6;
/// PCIe 4.0 x16 (GB/s, after encoding) when hwloc does not know the link.
constexpr double kDefaultPcieBytesPerS = 31.5e9;
/// Between host bridges of one NUMA node (NODE) peer-to-peer is slower;
/// across sockets (SYS) traffic bounces through host memory: 3/4 and 1/2 of
/// the PCIe figure.
constexpr double kSameNumaShare = 0.75, kSameNumaAlphaS = 12e-6;
constexpr double kCrossNumaShare = 0.5, kCrossNumaAlphaS = 15e-6;
/// Network links: 90% of the line rate; RDMA messages cost about 10
/// microseconds through NCCL, TCP ones (Gloo) about 50.
constexpr double kNetworkShare = 0.9;
constexpr double kInfinibandAlphaS = 10e-6, kEthernetAlphaS = 50e-6;
/// CPU ranks of one host: Gloo's TCP transport over loopback moves about
/// 2 GB/s with about 30 microseconds per message.
constexpr double kSharedMemoryAlphaS = 30e-6, kSharedMemoryBytesPerS = 2e9;

//===----------------------------------------------------------------------===//
// CPU: hwloc, /proc/cpuinfo, sysfs
//===----------------------------------------------------------------------===//

struct CpuInfo {
  int sockets = 0, numaNodes = 0, physicalCores = 0, logicalCpus = 0;
  std::string model;
  std::vector<std::string> isa; ///< the flags below that this CPU has
  double ghz = 0;
  std::string ghzSource;
  double memoryBytes = 0;
  std::string memorySource;
  std::string hwlocVersion;
  /// NVIDIA GPUs (vendor 0x10de, display/3D class) on the PCI bus: what
  /// hwloc sees whether or not a driver answers, and their PCIe link speed.
  int nvidiaPciDevices = 0;
  double slowestGpuLinkBytesPerS = 0;
};

// The ISA flags the profile reports: those that decide GEMM speed.
const char *const kIsaFlags[] = {
    "sse4_2",      "avx",      "avx2",     "fma",         "f16c",
    "avx512f",     "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
    "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",    "asimd",
    "sve",         "sve2"};

/// hwloc's release ("2.9.0"). The library reports only its API version
/// (hwloc_get_api_version: 2.8.0 for releases 2.8 to 2.11), so this is the
/// headers' release, which Debian's libhwloc-dev keeps equal to the
/// library's.
std::string hwlocVersionString() { return HWLOC_VERSION; }

/// The clock measured as the time of a chain of dependent integer adds, one
/// cycle each on every x86-64 and AArch64 core; the last resort when neither
/// cpufreq nor /proc/cpuinfo says (virtual machines often hide both). A busy
/// machine makes it read low, which errs on the conservative side.
double measureGHz() {
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    // A register operand, not an immediate: some cores fold adds of
    // immediates at rename, faster than a cycle each.
    unsigned long x = trial, one = 1;
    asm volatile("" : "+r"(one));
    constexpr long iterations = 1 << 21;
    auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < iterations; ++i) {
      // Eight dependent adds per iteration (the compiler unrolls the inner
      // loop) hide the outer loop's counter and branch; the empty asm stops
      // the compiler from folding the chain into one add.
      for (int k = 0; k < 8; ++k) {
        x += one;
        asm volatile("" : "+r"(x));
      }
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::max(best, 8.0 * iterations / seconds / 1e9);
  }
  return best;
}

void readProcCpuinfo(CpuInfo &cpu, double &cpuinfoMHz) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  cpuinfoMHz = 0;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string key = trim(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && cpu.model.empty())
      cpu.model = value;
    else if ((key == "flags" || key == "Features") && flags.empty()) {
      std::istringstream words(value);
      std::string word;
      while (words >> word)
        flags.insert(word);
    } else if (key == "cpu MHz" && cpuinfoMHz == 0)
      cpuinfoMHz = std::atof(value.c_str());
  }
  for (const char *flag : kIsaFlags)
    if (flags.count(flag))
      cpu.isa.push_back(flag);
}

/// The clock the peak is computed at: the base frequency where cpufreq
/// gives it (turbo is not sustained by all cores under a GEMM), else the
/// "@ 2.30GHz" of Intel's model names, else /proc/cpuinfo's current "cpu
/// MHz", else measured.
void findClock(CpuInfo &cpu, double cpuinfoMHz) {
  std::string base =
      readLine("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency");
  if (!base.empty() && std::atof(base.c_str()) > 0) {
    cpu.ghz = std::atof(base.c_str()) / 1e6; // kHz
    cpu.ghzSource = "cpufreq base_frequency";
    return;
  }
  size_t at = cpu.model.find('@');
  if (at != std::string::npos) {
    double ghz = std::atof(cpu.model.c_str() + at + 1);
    if (ghz > 0 && cpu.model.find("GHz", at) != std::string::npos) {
      cpu.ghz = ghz;
      cpu.ghzSource = "the model name";
      return;
    }
  }
  if (cpuinfoMHz > 0) {
    cpu.ghz = cpuinfoMHz / 1e3;
    cpu.ghzSource = "/proc/cpuinfo cpu MHz";
    return;
  }
  cpu.ghz = measureGHz();
  cpu.ghzSource = "measured (a chain of dependent adds)";
}

/// What the ranks of this machine can allocate: physical memory, lowered to
/// the cgroup's limit when a container has one.
void findMemory(CpuInfo &cpu) {
  double physical = double(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  cpu.memoryBytes = physical;
  cpu.memorySource = "sysconf";
  for (const char *limitFile :
       {"/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::string limit = readLine(limitFile);
    if (limit.empty() || limit == "max")
      continue;
    double bytes = std::atof(limit.c_str());
    if (bytes > 0 && bytes < cpu.memoryBytes) {
      cpu.memoryBytes = bytes;
      cpu.memorySource = std::string("cgroup limit ") + limitFile;
    }
  }
}

void readHwloc(CpuInfo &cpu) {
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0)
    fail("hwloc_topology_init failed");
  // PCI devices are filtered out by default; keep the ones that matter
  // (GPUs, NICs, storage) and the bridges above them.
  hwloc_topology_set_io_types_filter(topology,
                                     HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topology) != 0)
    fail("hwloc_topology_load failed");
  cpu.hwlocVersion = hwlocVersionString();
  cpu.sockets = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PACKAGE);
  cpu.numaNodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  cpu.physicalCores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
  cpu.logicalCpus = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PU);
  if (hwloc_obj_t package =
          hwloc_get_obj_by_type(topology, HWLOC_OBJ_PACKAGE, 0))
    if (const char *model = hwloc_obj_get_info_by_name(package, "CPUModel"))
      cpu.model = trim(model); // from CPUID, padded with spaces
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topology, nullptr); pci;
       pci = hwloc_get_next_pcidev(topology, pci)) {
    unsigned baseClass = pci->attr->pcidev.class_id >> 8;
    // 0x03: display controllers (VGA 0x0300, 3D 0x0302: data-center GPUs).
    if (pci->attr->pcidev.vendor_id != 0x10de || baseClass != 0x03)
      continue;
    ++cpu.nvidiaPciDevices;
    double speed = double(pci->attr->pcidev.linkspeed) * 1e9; // GB/s
    if (speed > 0 && (cpu.slowestGpuLinkBytesPerS == 0 ||
                      speed < cpu.slowestGpuLinkBytesPerS))
      cpu.slowestGpuLinkBytesPerS = speed;
  }
  hwloc_topology_destroy(topology);
  // Some virtual machines report no packages or cores; count what hwloc
  // surely has (PUs) instead of writing zeros.
  cpu.logicalCpus = std::max(cpu.logicalCpus, 1);
  cpu.physicalCores = std::max(cpu.physicalCores, 1);
  cpu.sockets = std::max(cpu.sockets, 1);
  cpu.numaNodes = std::max(cpu.numaNodes, 1);
}

//===----------------------------------------------------------------------===//
// Network interfaces
//===----------------------------------------------------------------------===//

struct NetworkInterface {
  std::string name;
  double bitsPerS = 0; ///< 0: unknown (virtual NICs report none)
  std::string kind;    ///< "ethernet" or "infiniband"
  bool physical = true;
};

/// Ethernet interfaces from /sys/class/net (ARPHRD_ETHER, up, not
/// loopback), and InfiniBand ports from /sys/class/infiniband (an IPoIB
/// netdev such as ib0 rides on one of those ports, so it is not listed
/// twice). RoCE ports have an Ethernet link layer: their netdev is listed.
std::vector<NetworkInterface> findNetworkInterfaces() {
  std::vector<NetworkInterface> interfaces;
  for (const std::string &name : listDir("/sys/class/net")) {
    std::string dir = "/sys/class/net/" + name;
    if (readLine(dir + "/type") != "1") // 772 loopback, 32 IPoIB, ...
      continue;
    if (readLine(dir + "/operstate") == "down")
      continue;
    NetworkInterface nic;
    nic.name = name;
    nic.kind = "ethernet";
    // Mbit/s; -1 or unreadable on virtual NICs.
    double mbits = std::atof(readLine(dir + "/speed").c_str());
    nic.bitsPerS = mbits > 0 ? mbits * 1e6 : 0;
    // Bridges, veth pairs and the like have no device behind them.
    nic.physical = access((dir + "/device").c_str(), F_OK) == 0;
    interfaces.push_back(nic);
  }
  for (const std::string &hca : listDir("/sys/class/infiniband")) {
    std::string portsDir = "/sys/class/infiniband/" + hca + "/ports";
    for (const std::string &port : listDir(portsDir)) {
      std::string dir = portsDir + "/" + port;
      if (readLine(dir + "/link_layer") != "InfiniBand")
        continue;
      // "4: ACTIVE"; a port without a cable does not connect nodes.
      if (readLine(dir + "/state").find("ACTIVE") == std::string::npos)
        continue;
      NetworkInterface nic;
      nic.name = hca + ":" + port;
      nic.kind = "infiniband";
      // "200 Gb/sec (4X HDR)": the data rate.
      nic.bitsPerS = std::atof(readLine(dir + "/rate").c_str()) * 1e9;
      interfaces.push_back(nic);
    }
  }
  return interfaces;
}

//===----------------------------------------------------------------------===//
// GPUs: nvidia-smi
//===----------------------------------------------------------------------===//

struct GpuQuery {
  std::vector<std::string> names;
  std::vector<double> memoryBytes;
};

/// Parses `nvidia-smi --query-gpu=name,memory.total
/// --format=csv,noheader,nounits`: "NVIDIA A100-SXM4-80GB, 81920" per GPU.
bool parseGpuQuery(const std::string &text, GpuQuery &query,
                   std::string &error) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty())
      continue;
    size_t comma = line.rfind(',');
    if (comma == std::string::npos) {
      error = "expected 'name, memory.total in MiB', got '" + line + "'";
      return false;
    }
    query.names.push_back(trim(line.substr(0, comma)));
    query.memoryBytes.push_back(std::atof(line.c_str() + comma + 1) * 1024 *
                                1024);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

struct Options {
  std::string output;
  int cpuRanks = 0; ///< 0: physical cores / threadsPerRank
  int threadsPerRank = 1;
  std::string nvidiaSmiTopo, nvidiaSmiQuery;
};

[[noreturn]] void usage(const std::string &error) {
  if (!error.empty())
    std::fprintf(stderr, "rtx-topology: error: %s\n", error.c_str());
  std::fprintf(
      error.empty() ? stdout : stderr,
      "usage: rtx-topology [-o FILE] [--cpu-ranks N] [--threads-per-rank N]\n"
      "                    [--nvidia-smi-topo FILE] [--nvidia-smi-query "
      "FILE]\n"
      "\n"
      "Writes the hardware profile of this machine (rtx-hardware-profile/1,\n"
      "docs/topology.md) to FILE or stdout: GPUs and their links from\n"
      "nvidia-smi where it answers, else a CPU profile of N ranks.\n"
      "\n"
      "  -o FILE                  write the profile to FILE\n"
      "  --cpu-ranks N            CPU profile: N ranks on this machine\n"
      "                           (default: physical cores / threads per "
      "rank)\n"
      "  --threads-per-rank N     CPU profile: cores per rank (default 1)\n"
      "  --nvidia-smi-topo FILE   (testing) read `nvidia-smi topo -m` from "
      "FILE\n"
      "                           instead of running nvidia-smi\n"
      "  --nvidia-smi-query FILE  (testing) read `nvidia-smi --query-gpu=\n"
      "                           name,memory.total --format=csv,noheader,\n"
      "                           nounits` from FILE\n");
  std::exit(error.empty() ? 0 : 1);
}

int parsePositive(const std::string &flag, const std::string &value) {
  char *end = nullptr;
  long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || n < 1 || n > 1 << 20)
    usage(flag + " needs a positive integer, got '" + value + "'");
  return int(n);
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help")
      usage("");
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-o")
      options.output = value();
    else if (arg == "--cpu-ranks")
      options.cpuRanks = parsePositive(arg, value());
    else if (arg == "--threads-per-rank")
      options.threadsPerRank = parsePositive(arg, value());
    else if (arg == "--nvidia-smi-topo")
      options.nvidiaSmiTopo = value();
    else if (arg == "--nvidia-smi-query")
      options.nvidiaSmiQuery = value();
    else
      usage("unknown argument '" + arg + "'");
  }
  if (!options.nvidiaSmiQuery.empty() && options.nvidiaSmiTopo.empty())
    usage("--nvidia-smi-query needs --nvidia-smi-topo");
  return options;
}

//===----------------------------------------------------------------------===//
// The profile
//===----------------------------------------------------------------------===//

Json linkClass(double alphaS, double betaBytesPerS) {
  Json entry;
  entry["alpha_s"] = alphaS;
  entry["beta_bytes_per_s"] = betaBytesPerS;
  return entry;
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || !name[0])
    return "localhost";
  return name;
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

/// The link class between nodes and its figures: InfiniBand where an
/// active IB port exists, else Ethernet at the speed of the fastest
/// physical interface (any interface in a container, whose eth0 is a veth).
void addInterNode(const std::vector<NetworkInterface> &interfaces,
                  Json &profile, Json &classes) {
  auto fastest = [&](const std::string &kind, bool physicalOnly) {
    const NetworkInterface *best = nullptr;
    for (const NetworkInterface &nic : interfaces)
      if (nic.kind == kind && (nic.physical || !physicalOnly) &&
          (!best || nic.bitsPerS > best->bitsPerS))
        best = &nic;
    return best;
  };
  if (const NetworkInterface *ib = fastest("infiniband", false)) {
    profile["inter_node"] = "infiniband";
    classes["infiniband"] =
        linkClass(kInfinibandAlphaS, kNetworkShare * ib->bitsPerS / 8);
    return;
  }
  const NetworkInterface *eth = fastest("ethernet", true);
  if (!eth)
    eth = fastest("ethernet", false);
  double bitsPerS = eth ? eth->bitsPerS : 0;
  if (bitsPerS <= 0) {
    // 10 Gbit/s: what a cloud VM's virtual NIC commonly gets.
    warn(std::string(eth ? "the link speed of " + eth->name + " is unknown"
                         : "no network interface is up") +
         ": ethernet taken as 10 Gbit/s (rtx-calibrate measures it)");
    bitsPerS = 10e9;
  }
  profile["inter_node"] = "ethernet";
  classes["ethernet"] =
      linkClass(kEthernetAlphaS, kNetworkShare * bitsPerS / 8);
}

Json cpuSection(const CpuInfo &cpu) {
  Json section;
  section["sockets"] = cpu.sockets;
  section["numa_nodes"] = cpu.numaNodes;
  section["physical_cores"] = cpu.physicalCores;
  section["logical_cpus"] = cpu.logicalCpus;
  section["isa"] = cpu.isa;
  return section;
}

Json networkSection(const std::vector<NetworkInterface> &interfaces) {
  Json list = Json::array();
  for (const NetworkInterface &nic : interfaces) {
    Json entry;
    entry["name"] = nic.name;
    entry["speed_bits_per_s"] = (long long)std::llround(nic.bitsPerS);
    entry["kind"] = nic.kind;
    list.push_back(entry);
  }
  return list;
}

std::string cpuSummary(const CpuInfo &cpu) {
  return cpu.model + ", " + plural(cpu.sockets, "socket") + ", " +
         plural(cpu.numaNodes, "NUMA node") + ", " +
         plural(cpu.physicalCores, "physical core") + ", " +
         plural(cpu.logicalCpus, "logical CPU") + ", " +
         formatGiB(cpu.memoryBytes);
}

Json cpuProfile(const Options &options, const CpuInfo &cpu,
                std::vector<std::string> &sources) {
  int ranks = options.cpuRanks
                  ? options.cpuRanks
                  : std::max(1, cpu.physicalCores / options.threadsPerRank);
  double coresPerRank = double(cpu.physicalCores) / ranks;
  std::string rule;
  double flopsPerCycle = cpuF32FlopsPerCycle(cpu.isa, rule);
  double peak = std::round(coresPerRank * cpu.ghz * 1e9 * flopsPerCycle);
  // About 10 GB/s of DRAM bandwidth per core in a GEMM-free stream, capped
  // at 100 GB/s per socket (6-8 DDR4/DDR5 channels sustain about that).
  double bandwidth = std::min(coresPerRank * 10e9, cpu.sockets * 100e9 / ranks);

  char figures[256];
  std::snprintf(figures, sizeof figures,
                "peak_flops: %.3g %s per rank x %.2f GHz (%s) x %s; bf16/f16 "
                "as f32 (the CPU kernels widen them to f32)",
                coresPerRank, coresPerRank == 1 ? "core" : "cores", cpu.ghz,
                cpu.ghzSource.c_str(), rule.c_str());
  sources.push_back(figures);
  sources.push_back("memory_bytes: " + cpu.memorySource + " / " +
                    plural(ranks, "rank") +
                    "; memory_bandwidth: 10 GB/s per core, at most 100 GB/s "
                    "per socket (an estimate: rtx-calibrate measures it)");

  Json device;
  device["kind"] = "cpu";
  device["model"] = cpu.model;
  device["memory_bytes"] = (long long)(cpu.memoryBytes / ranks);
  device["peak_flops"] = {{"f32", peak}, {"bf16", peak}, {"f16", peak}};
  device["memory_bandwidth"] = bandwidth;
  // OpenBLAS SGEMM on a core to itself sustains about 60% of the FMA peak
  // under the rule's conservative pipe count.
  device["matmul_efficiency"] = 0.6;
  // A CPU kernel call: dispatch and a few allocations.
  device["op_overhead_s"] = 2e-6;

  Json profile;
  profile["schema"] = "rtx-hardware-profile/1";
  profile["name"] = hostName() + "-cpu";
  profile["description"] = "CPU profile of " + hostName() + ": " +
                           plural(ranks, "rank") + " sharing " +
                           cpuSummary(cpu);
  profile["sources"] = sources;
  profile["device"] = device;
  profile["devices_per_node"] = ranks;
  Json classes;
  classes["shared_memory"] =
      linkClass(kSharedMemoryAlphaS, kSharedMemoryBytesPerS);
  std::vector<std::vector<std::string>> matrix(
      ranks, std::vector<std::string>(ranks, "shared_memory"));
  for (int r = 0; r < ranks; ++r)
    matrix[r][r] = "self";
  profile["link_classes"] = classes;
  profile["intra_node"] = matrix;
  return profile;
}

Json gpuProfile(const NvidiaSmiTopo &topo, const GpuQuery &query,
                const CpuInfo &cpu, std::vector<std::string> &sources) {
  size_t n = topo.gpus.size();
  GpuLinkClasses links = classifyGpuLinks(topo);
  for (const std::string &warning : links.warnings)
    warn(warning);

  std::string model = query.names.empty() ? "" : query.names.front();
  for (const std::string &name : query.names)
    if (name != model)
      warn("GPUs differ (" + model + ", " + name +
           "): the profile describes GPU0's model");
  if (!query.names.empty() && query.names.size() != n)
    warn("nvidia-smi lists " + std::to_string(query.names.size()) +
         " GPUs but its topology matrix " + std::to_string(n));
  PeakFigures peak;
  std::string matchedAs;
  if (model.empty()) {
    warn("the GPU model is unknown: peak_flops and memory_bandwidth are 0, "
         "which the planner refuses until rtx-calibrate measures them");
    model = "unknown NVIDIA GPU";
  } else if (!lookupGpu(model, peak, matchedAs)) {
    warn("'" + model +
         "' is not in rtx-topology's GPU table: peak_flops "
         "and memory_bandwidth are 0, which the planner refuses until "
         "rtx-calibrate measures them");
  } else {
    sources.push_back("peak_flops, memory_bandwidth: NVIDIA datasheet of " +
                      matchedAs +
                      " (dense; f32 is CUDA-core FP32, tf32 tensor cores)");
  }
  double memory = peak.memoryBytes;
  if (!query.memoryBytes.empty() && query.memoryBytes.front() > 0)
    memory =
        *std::min_element(query.memoryBytes.begin(), query.memoryBytes.end());
  if (memory <= 0)
    warn("the GPU memory is unknown: memory_bytes is 0");

  Json device;
  device["kind"] = "gpu";
  device["model"] = model;
  device["memory_bytes"] = (long long)memory;
  Json peaks;
  peaks["f32"] = peak.f32;
  if (peak.tf32 > 0)
    peaks["tf32"] = peak.tf32;
  peaks["bf16"] = peak.bf16;
  peaks["f16"] = peak.f16;
  device["peak_flops"] = peaks;
  device["memory_bandwidth"] = peak.memoryBandwidth;
  // Large cuBLAS GEMMs sustain about 80% of the datasheet peak.
  device["matmul_efficiency"] = 0.8;
  // A kernel launch.
  device["op_overhead_s"] = 5e-6;

  Json profile;
  profile["schema"] = "rtx-hardware-profile/1";
  profile["name"] = hostName() + "-gpu";
  profile["description"] = "GPU profile of " + hostName() + ": " +
                           std::to_string(n) + " x " + model + "; host " +
                           cpuSummary(cpu);
  profile["sources"] = sources;
  profile["device"] = device;
  profile["devices_per_node"] = n;

  // PCIe: the slowest GPU's link as hwloc reports it.
  double pcie = kPcieShare * (cpu.slowestGpuLinkBytesPerS > 0
                                  ? cpu.slowestGpuLinkBytesPerS
                                  : kDefaultPcieBytesPerS);
  Json classes;
  std::set<std::string> used;
  for (const auto &row : links.matrix)
    used.insert(row.begin(), row.end());
  for (const auto &[name, count] : links.nvlinkClasses)
    classes[name] = linkClass(kNvlinkAlphaS,
                              kNvlinkShare * count * kNvlinkBytesPerSPerLink);
  if (used.count("pcie"))
    classes["pcie"] = linkClass(kPcieAlphaS, pcie);
  if (used.count("same_numa"))
    classes["same_numa"] = linkClass(kSameNumaAlphaS, kSameNumaShare * pcie);
  if (used.count("cross_numa"))
    classes["cross_numa"] = linkClass(kCrossNumaAlphaS, kCrossNumaShare * pcie);
  profile["link_classes"] = classes;
  profile["intra_node"] = links.matrix;
  return profile;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);

  CpuInfo cpu;
  double cpuinfoMHz = 0;
  readProcCpuinfo(cpu, cpuinfoMHz);
  readHwloc(cpu);
  findClock(cpu, cpuinfoMHz);
  findMemory(cpu);
  std::vector<NetworkInterface> interfaces = findNetworkInterfaces();

  std::vector<std::string> sources;
  sources.push_back("rtx-topology on " + hostName() + " at " + utcNow() +
                    ": hwloc " + cpu.hwlocVersion +
                    ", /proc/cpuinfo, /sys/class/net, /sys/class/infiniband");

  // GPUs: from the fixture files, else from nvidia-smi where it answers.
  std::string topoText, queryText;
  bool haveGpus = false;
  if (!options.nvidiaSmiTopo.empty()) {
    if (!readFile(options.nvidiaSmiTopo, topoText))
      fail("cannot read '" + options.nvidiaSmiTopo +
           "': " + std::strerror(errno));
    if (!options.nvidiaSmiQuery.empty() &&
        !readFile(options.nvidiaSmiQuery, queryText))
      fail("cannot read '" + options.nvidiaSmiQuery +
           "': " + std::strerror(errno));
    sources.push_back("nvidia-smi topo -m read from " + options.nvidiaSmiTopo +
                      (options.nvidiaSmiQuery.empty()
                           ? ""
                           : ", GPU names from " + options.nvidiaSmiQuery));
    haveGpus = true;
  } else if (onPath("nvidia-smi")) {
    if (runCommand("nvidia-smi topo -m", topoText) &&
        runCommand("nvidia-smi --query-gpu=name,memory.total "
                   "--format=csv,noheader,nounits",
                   queryText)) {
      std::string driver;
      runCommand("nvidia-smi --query-gpu=driver_version "
                 "--format=csv,noheader -i 0",
                 driver);
      sources.push_back("nvidia-smi topo -m, nvidia-smi --query-gpu (driver " +
                        trim(driver) + ")");
      haveGpus = true;
    } else {
      warn("nvidia-smi is on PATH but does not answer (no driver?): "
           "writing a CPU profile");
    }
  } else if (cpu.nvidiaPciDevices > 0) {
    warn(std::to_string(cpu.nvidiaPciDevices) +
         " NVIDIA GPUs are on the PCI bus but nvidia-smi is not on PATH: "
         "writing a CPU profile");
  }

  Json profile;
  if (haveGpus) {
    NvidiaSmiTopo topo;
    std::string error;
    if (!parseNvidiaSmiTopo(topoText, topo, error))
      fail((options.nvidiaSmiTopo.empty() ? std::string("nvidia-smi topo -m")
                                          : options.nvidiaSmiTopo) +
           ": " + error);
    GpuQuery query;
    if (!parseGpuQuery(queryText, query, error))
      fail((options.nvidiaSmiQuery.empty()
                ? std::string("nvidia-smi --query-gpu")
                : options.nvidiaSmiQuery) +
           ": " + error);
    profile = gpuProfile(topo, query, cpu, sources);
  } else {
    profile = cpuProfile(options, cpu, sources);
  }
  profile["sources"].push_back(
      "link_classes: shares of nominal rates (NVLink 80% of 25 GB/s per "
      "link, PCIe 70%, network 90% of the line rate) and typical message "
      "costs; rtx-calibrate measures them");
  Json classes = profile["link_classes"];
  addInterNode(interfaces, profile, classes);
  profile["link_classes"] = classes;
  // Keep the schema's order: inter_node after intra_node.
  Json ordered;
  for (const char *key :
       {"schema", "name", "description", "sources", "device",
        "devices_per_node", "link_classes", "intra_node", "inter_node"})
    ordered[key] = profile[key];
  ordered["network_interfaces"] = networkSection(interfaces);
  ordered["cpu"] = cpuSection(cpu);

  std::string text = ordered.dump(2) + "\n";
  if (options.output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::ofstream out(options.output);
  if (!out || !(out << text) || !(out.flush()))
    fail("cannot write '" + options.output + "': " + std::strerror(errno));
  return 0;
}
