//===- NvidiaSmiTopo.cpp - Reading `nvidia-smi topo -m` -------------------===//
//
// nvidia-smi prints a matrix for people, not programs: a header line of
// column names (GPU0.., NIC0.. or mlx5_0.., "CPU Affinity", "NUMA Affinity",
// "GPU NUMA ID"), one row per GPU and per NIC, then a legend. Cells are
// separated by tabs, the diagonal is " X " with spaces, and the attribute
// columns may hold empty cells; so GPU and NIC cells are taken by position
// and the attribute cells are the non-empty ones that follow.
//
//===----------------------------------------------------------------------===//

#include "NvidiaSmiTopo.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

namespace rtx::topology {

namespace {

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

/// Drops ANSI escape sequences (ESC [ ... letter): some nvidia-smi versions
/// underline the header even when the output is not a terminal.
std::string stripAnsi(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !std::isalpha(static_cast<unsigned char>(s[i])))
        ++i;
      continue;
    }
    out += s[i];
  }
  return out;
}

/// Splits a matrix line into trimmed cells, keeping empty ones. Tabs are the
/// separator when the line has any; a hand-typed line uses runs of two or
/// more spaces ("CPU Affinity" has one).
std::vector<std::string> splitCells(const std::string &line) {
  std::vector<std::string> cells;
  if (line.find('\t') != std::string::npos) {
    std::string cell;
    std::istringstream in(line);
    while (std::getline(in, cell, '\t'))
      cells.push_back(trim(cell));
    if (!line.empty() && line.back() == '\t')
      cells.push_back("");
    return cells;
  }
  size_t i = 0;
  // A leading run of spaces stands for the empty corner cell of the header.
  if (line.size() >= 2 && line[0] == ' ' && line[1] == ' ')
    cells.push_back("");
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ')
      ++i;
    if (i >= line.size())
      break;
    size_t end = line.find("  ", i);
    if (end == std::string::npos)
      end = line.size();
    cells.push_back(trim(line.substr(i, end - i)));
    i = end;
  }
  return cells;
}

bool isIndexedName(const std::string &s, const std::string &prefix) {
  if (s.size() <= prefix.size() || s.compare(0, prefix.size(), prefix) != 0)
    return false;
  return std::all_of(s.begin() + prefix.size(), s.end(),
                     [](char c) { return std::isdigit((unsigned char)c); });
}

bool isGpuName(const std::string &s) { return isIndexedName(s, "GPU"); }

/// NIC columns: "NIC0" (drivers since about 525, with a NIC legend) or the
/// device name itself in older ones ("mlx5_0", "mlx4_0", "bnxt_re0", ...):
/// whatever header cell is neither a GPU nor an attribute column.
bool isAttributeColumn(const std::string &s) {
  return s.find("Affinity") != std::string::npos ||
         s.find("NUMA ID") != std::string::npos;
}

} // namespace

bool parseNvidiaSmiTopo(const std::string &text, NvidiaSmiTopo &topo,
                        std::string &error) {
  topo = NvidiaSmiTopo();
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      lines.push_back(stripAnsi(line));
    }
  }

  // The header: the first line whose cells name GPU0.
  size_t headerAt = lines.size();
  std::vector<std::string> header;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> cells = splitCells(lines[i]);
    if (std::find(cells.begin(), cells.end(), "GPU0") != cells.end() &&
        !cells.empty() && !isGpuName(cells[0])) {
      headerAt = i;
      header = cells;
      break;
    }
  }
  if (headerAt == lines.size()) {
    error = "no matrix header (a line of column names GPU0, GPU1, ...)";
    return false;
  }
  // header[0] is the empty corner cell.
  std::vector<std::string> columns;
  for (size_t i = 1; i < header.size(); ++i)
    if (!header[i].empty())
      columns.push_back(header[i]);
  size_t numLinkColumns = 0;
  while (numLinkColumns < columns.size() &&
         !isAttributeColumn(columns[numLinkColumns]))
    ++numLinkColumns;
  std::vector<std::string> attributes(columns.begin() + numLinkColumns,
                                      columns.end());
  for (size_t c = 0; c < numLinkColumns; ++c) {
    if (isGpuName(columns[c])) {
      if (!topo.nics.empty()) {
        error = "column '" + columns[c] + "' follows the NIC columns";
        return false;
      }
      topo.gpus.push_back(columns[c]);
    } else {
      topo.nics.push_back(columns[c]);
    }
  }
  for (size_t g = 0; g < topo.gpus.size(); ++g)
    if (topo.gpus[g] != "GPU" + std::to_string(g)) {
      error = "column " + std::to_string(g + 1) + " is '" + topo.gpus[g] +
              "', expected GPU" + std::to_string(g);
      return false;
    }

  auto attributeIndex = [&](const std::string &name) -> int {
    auto it = std::find(attributes.begin(), attributes.end(), name);
    return it == attributes.end() ? -1 : int(it - attributes.begin());
  };
  int cpuColumn = attributeIndex("CPU Affinity");
  int numaColumn = attributeIndex("NUMA Affinity");

  // The rows, up to the legend.
  std::map<std::string, std::string> nicLegend;
  bool inLegend = false;
  for (size_t i = headerAt + 1; i < lines.size(); ++i) {
    std::string line = trim(lines[i]);
    if (line.empty())
      continue;
    if (line.rfind("Legend:", 0) == 0 || line.rfind("NIC Legend:", 0) == 0) {
      inLegend = true;
      continue;
    }
    if (inLegend) {
      // "NIC0: mlx5_0"
      size_t colon = line.find(':');
      if (colon != std::string::npos &&
          isIndexedName(line.substr(0, colon), "NIC"))
        nicLegend[line.substr(0, colon)] = trim(line.substr(colon + 1));
      continue;
    }
    std::vector<std::string> cells = splitCells(lines[i]);
    if (cells.empty() || !isGpuName(cells[0]))
      continue; // a NIC row: the GPU rows already hold the GPU-NIC codes
    size_t g = topo.gpuLinks.size();
    if (cells[0] != "GPU" + std::to_string(g)) {
      error = "row '" + cells[0] + "' where GPU" + std::to_string(g) +
              " was expected";
      return false;
    }
    if (cells.size() < 1 + numLinkColumns) {
      error = "row " + cells[0] + " has " + std::to_string(cells.size() - 1) +
              " cells, expected at least " + std::to_string(numLinkColumns);
      return false;
    }
    std::vector<std::string> links;
    for (size_t c = 0; c < numLinkColumns; ++c) {
      if (cells[1 + c].empty()) {
        error =
            "row " + cells[0] + ": empty cell in column '" + columns[c] + "'";
        return false;
      }
      links.push_back(cells[1 + c]);
    }
    topo.gpuLinks.emplace_back(links.begin(), links.begin() + topo.gpus.size());
    topo.gpuToNic.emplace_back(links.begin() + topo.gpus.size(), links.end());
    std::vector<std::string> values;
    for (size_t c = 1 + numLinkColumns; c < cells.size(); ++c)
      if (!cells[c].empty())
        values.push_back(cells[c]);
    auto value = [&](int column) {
      return column >= 0 && size_t(column) < values.size() ? values[column]
                                                           : std::string();
    };
    topo.cpuAffinity.push_back(value(cpuColumn));
    topo.numaAffinity.push_back(value(numaColumn));
  }
  if (topo.gpuLinks.size() != topo.gpus.size()) {
    error = "the header names " + std::to_string(topo.gpus.size()) +
            " GPUs but " + std::to_string(topo.gpuLinks.size()) +
            " GPU rows follow";
    return false;
  }
  if (topo.gpus.empty()) {
    error = "no GPU columns";
    return false;
  }
  for (size_t a = 0; a < topo.gpus.size(); ++a) {
    if (topo.gpuLinks[a][a] != "X") {
      error = topo.gpus[a] + " to itself is '" + topo.gpuLinks[a][a] +
              "', expected X";
      return false;
    }
    for (size_t b = 0; b < a; ++b)
      if (topo.gpuLinks[a][b] != topo.gpuLinks[b][a]) {
        error = "the matrix is not symmetric: " + topo.gpus[a] + "-" +
                topo.gpus[b] + " is " + topo.gpuLinks[a][b] + " but " +
                topo.gpus[b] + "-" + topo.gpus[a] + " is " +
                topo.gpuLinks[b][a];
        return false;
      }
  }
  for (const std::string &nic : topo.nics) {
    auto it = nicLegend.find(nic);
    topo.nicDevices.push_back(it == nicLegend.end() ? nic : it->second);
  }
  return true;
}

int nvlinkCount(const std::string &code) {
  if (!isIndexedName(code, "NV"))
    return 0;
  return std::stoi(code.substr(2));
}

std::string linkClassOfCode(const std::string &code) {
  if (code == "X")
    return "self";
  // PIX: at most one PCIe bridge; PXB: several bridges, no host bridge; PHB:
  // through the host bridge (the CPU's root complex). All three keep the
  // traffic on one PCIe tree of one CPU.
  if (code == "PIX" || code == "PXB" || code == "PHB")
    return "pcie";
  // NODE: between PCIe host bridges of one NUMA node.
  if (code == "NODE")
    return "same_numa";
  // SYS: over the SMP interconnect between NUMA nodes (UPI, xGMI); drivers
  // before about 384 called it SOC.
  if (code == "SYS" || code == "SOC")
    return "cross_numa";
  return "";
}

GpuLinkClasses classifyGpuLinks(const NvidiaSmiTopo &topo) {
  GpuLinkClasses result;
  size_t n = topo.gpus.size();
  bool throughSwitch = false;
  std::set<int> counts;
  for (size_t a = 0; a < n; ++a) {
    int links = 0;
    for (size_t b = 0; b < n; ++b)
      if (int k = nvlinkCount(topo.gpuLinks[a][b])) {
        links += k;
        counts.insert(k);
      }
    if (links > kMaxNvlinksPerGpu)
      throughSwitch = true;
  }
  auto nvlinkClass = [&](int k) {
    if (throughSwitch)
      return std::string("nvswitch");
    return counts.size() == 1 ? std::string("nvlink")
                              : "nvlink" + std::to_string(k);
  };
  std::set<std::string> unknown;
  result.matrix.assign(n, std::vector<std::string>(n));
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) {
      const std::string &code = topo.gpuLinks[a][b];
      if (int k = nvlinkCount(code)) {
        std::string name = nvlinkClass(k);
        result.matrix[a][b] = name;
        auto known = std::find_if(
            result.nvlinkClasses.begin(), result.nvlinkClasses.end(),
            [&](const auto &entry) { return entry.first == name; });
        if (known == result.nvlinkClasses.end())
          result.nvlinkClasses.emplace_back(name, k);
        else
          // Behind NVSwitches every pair has the same count in practice;
          // if not, the class takes the smallest (the conservative one).
          known->second = std::min(known->second, k);
        continue;
      }
      std::string name = linkClassOfCode(code);
      if (name.empty()) {
        unknown.insert(code);
        name = "cross_numa";
      }
      result.matrix[a][b] = name;
    }
  for (const std::string &code : unknown)
    result.warnings.push_back("unknown nvidia-smi link code '" + code +
                              "': taken as cross_numa, the slowest class");
  return result;
}

} // namespace rtx::topology
