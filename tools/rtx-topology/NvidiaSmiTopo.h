//===- NvidiaSmiTopo.h - Reading `nvidia-smi topo -m` -----------*- C++ -*-===//
//
// The GPU-to-GPU link matrix that `nvidia-smi topo -m` prints, parsed into
// codes (X, NV12, PIX, PXB, PHB, NODE, SYS) and mapped to the link classes of
// a hardware profile (docs/topology.md). Plain C++17: the parser takes the
// text, so tests feed it fixtures of machines this one is not.
//
//===----------------------------------------------------------------------===//

#ifndef RTX_TOOLS_RTX_TOPOLOGY_NVIDIASMITOPO_H
#define RTX_TOOLS_RTX_TOPOLOGY_NVIDIASMITOPO_H

#include <string>
#include <vector>

namespace rtx::topology {

/// One `nvidia-smi topo -m` matrix. Rows and columns of the GPU part are in
/// the order nvidia-smi lists them (GPU0, GPU1, ...).
struct NvidiaSmiTopo {
  std::vector<std::string> gpus;                  ///< "GPU0", "GPU1", ...
  std::vector<std::vector<std::string>> gpuLinks; ///< gpus x gpus codes
  std::vector<std::string> nics;                  ///< "NIC0" or "mlx5_0"
  std::vector<std::vector<std::string>> gpuToNic; ///< gpus x nics codes
  std::vector<std::string> cpuAffinity;           ///< per GPU, e.g. "48-63"
  std::vector<std::string> numaAffinity;          ///< per GPU, e.g. "3"
  /// The NIC legend ("NIC0: mlx5_0"): the device name of each entry of nics,
  /// or the entry itself when the matrix names devices directly.
  std::vector<std::string> nicDevices;
};

/// Parses the text of `nvidia-smi topo -m`. Columns are separated by tabs
/// (what nvidia-smi writes) or, in text typed by hand, by two or more
/// spaces; ANSI escape sequences (nvidia-smi underlines the header on some
/// versions) are ignored. On malformed text returns false and sets `error`.
bool parseNvidiaSmiTopo(const std::string &text, NvidiaSmiTopo &topo,
                        std::string &error);

/// The number of NVLinks in a code such as "NV12", or 0 when it is not one.
int nvlinkCount(const std::string &code);

/// The link class of one non-NVLink code: "self" (X), "pcie" (PIX, PXB, PHB),
/// "same_numa" (NODE), "cross_numa" (SYS, and SOC of old drivers), or ""
/// when the code is unknown.
std::string linkClassOfCode(const std::string &code);

/// NVLink bandwidth per link and direction, bytes/s: 25 GB/s for NVLink 2
/// (V100), 3 (A100) and 4 (H100), whose GPUs have 6, 12 and 18 links.
constexpr double kNvlinkBytesPerSPerLink = 25e9;
/// The most NVLinks one GPU has (Hopper: 18). A GPU whose NV# counts to its
/// peers add up to more reaches them through NVSwitches, not direct links.
constexpr int kMaxNvlinksPerGpu = 18;

/// The intra-node matrix of link classes for the GPUs of `topo`, and the
/// NVLink counts behind its NVLink classes. NVLink pairs are "nvswitch" when
/// the counts of one GPU add up to more than kMaxNvlinksPerGpu (a DGX A100
/// shows NV12 to each of 7 peers: 84 links, which only a switch provides),
/// else "nvlink" when every NVLink pair has the same count, else
/// "nvlink<N>" per count N (a V100 hybrid cube mesh has NV1 and NV2 pairs).
/// Unknown codes become "cross_numa", the slowest class, with a warning in
/// `warnings`.
struct GpuLinkClasses {
  std::vector<std::vector<std::string>> matrix;
  /// class name -> NVLink count, for the NVLink classes present.
  std::vector<std::pair<std::string, int>> nvlinkClasses;
  std::vector<std::string> warnings;
};
GpuLinkClasses classifyGpuLinks(const NvidiaSmiTopo &topo);

} // namespace rtx::topology

#endif // RTX_TOOLS_RTX_TOPOLOGY_NVIDIASMITOPO_H
