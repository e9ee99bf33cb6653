//===- HardwareProfile.cpp - parsing and querying hardware profiles -------===//
//
// llvm::json reads the profile; each error names the field by its path
// ("device.memory_bytes: expected a positive integer"), so a malformed
// profile is refused rather than crashing or taking a default.
//
//===----------------------------------------------------------------------===//

#include "rtx/Analysis/HardwareProfile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace mlir;
using namespace mlir::rtx;
namespace json = llvm::json;

namespace {
struct BuiltinProfile {
  const char *name;
  const char *text;
};
// Generated from lib/Analysis/profiles/*.json (EmbedProfiles.cmake).
#include "BuiltinProfiles.inc"
} // namespace

const char *mlir::rtx::commPatternName(CommPattern kind) {
  switch (kind) {
  case CommPattern::AllReduce:
    return "all_reduce";
  case CommPattern::AllGather:
    return "all_gather";
  case CommPattern::ReduceScatter:
    return "reduce_scatter";
  case CommPattern::SendRecv:
    return "send_recv";
  }
  return "?";
}

const LinkClass &HardwareProfile::link(int64_t a, int64_t b) const {
  int64_t nodeA = a / devicesPerNode, nodeB = b / devicesPerNode;
  const std::string &name =
      nodeA != nodeB
          ? interNode
          : intraNode[a % devicesPerNode][b % devicesPerNode];
  return linkClasses.at(name);
}

double HardwareProfile::peak(llvm::StringRef dtype) const {
  auto it = peakFlops.find(dtype.str());
  if (it != peakFlops.end())
    return it->second;
  it = peakFlops.find("f32");
  return it == peakFlops.end() ? 0 : it->second;
}

double HardwareProfile::matmulRate(int64_t m, int64_t n, int64_t k,
                                   llvm::StringRef dtype,
                                   bool transposedLhs) const {
  const MatmulSample *best = nullptr;
  double bestDistance = 0;
  bool layoutMeasured = llvm::any_of(matmul, [&](const MatmulSample &s) {
    return s.transposedLhs == transposedLhs;
  });
  for (const MatmulSample &s : matmul) {
    if (layoutMeasured && s.transposedLhs != transposedLhs)
      continue;
    double d = std::abs(std::log(double(std::max<int64_t>(m, 1)) / s.m)) +
               std::abs(std::log(double(std::max<int64_t>(n, 1)) / s.n)) +
               std::abs(std::log(double(std::max<int64_t>(k, 1)) / s.k));
    if (!best || d < bestDistance) {
      best = &s;
      bestDistance = d;
    }
  }
  if (!best)
    return peak(dtype) * matmulEfficiency;
  double rate = best->flopsPerSecond;
  if (best->dtype != dtype && peak(best->dtype) > 0)
    rate *= peak(dtype) / peak(best->dtype);
  return rate;
}

std::optional<CollectiveFit>
HardwareProfile::collective(CommPattern kind, int64_t ranks) const {
  auto it = collectives.find(kind);
  if (it == collectives.end())
    return std::nullopt;
  for (const CollectiveFit &fit : it->second)
    if (fit.ranks == ranks)
      return fit;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {
/// The first error of a parse, with the path of its field.
struct ParseError {
  std::string message;
};

/// A field's path: "device" + "memory_bytes" -> "device.memory_bytes".
struct Path {
  std::string text;
  ParseError *error;
  Path field(llvm::StringRef key) const {
    return {text.empty() ? key.str() : text + "." + key.str(), error};
  }
  Path index(size_t i) const {
    return {text + "[" + std::to_string(i) + "]", error};
  }
  void report(const llvm::Twine &message) const {
    if (error->message.empty())
      error->message = (text.empty() ? "(top level)" : text) + ": " +
                       message.str();
  }
};

/// Reads fields of one JSON object, recording the first error at its path.
class Reader {
public:
  Reader(const json::Object &object, Path path) : object(object), path(path) {}

  bool number(llvm::StringRef key, double &out, bool required = true,
              bool positive = true) {
    const json::Value *v = object.get(key);
    if (!v)
      return !required || fail(key, "missing");
    std::optional<double> d = v->getAsNumber();
    if (!d || !std::isfinite(*d) || (positive ? *d <= 0 : *d < 0))
      return fail(key, positive ? "expected a positive number"
                                : "expected a number >= 0");
    out = *d;
    return true;
  }
  bool integer(llvm::StringRef key, int64_t &out, bool required = true) {
    const json::Value *v = object.get(key);
    if (!v)
      return !required || fail(key, "missing");
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i <= 0)
      return fail(key, "expected a positive integer");
    out = *i;
    return true;
  }
  bool string(llvm::StringRef key, std::string &out, bool required = true) {
    const json::Value *v = object.get(key);
    if (!v)
      return !required || fail(key, "missing");
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s || s->empty())
      return fail(key, "expected a non-empty string");
    out = s->str();
    return true;
  }
  const json::Object *child(llvm::StringRef key, bool required = true) {
    const json::Value *v = object.get(key);
    if (!v) {
      if (required)
        fail(key, "missing");
      return nullptr;
    }
    const json::Object *o = v->getAsObject();
    if (!o)
      fail(key, "expected an object");
    return o;
  }
  const json::Array *array(llvm::StringRef key, bool required = true) {
    const json::Value *v = object.get(key);
    if (!v) {
      if (required)
        fail(key, "missing");
      return nullptr;
    }
    const json::Array *a = v->getAsArray();
    if (!a)
      fail(key, "expected an array");
    return a;
  }
  bool fail(llvm::StringRef key, llvm::StringRef message) {
    path.field(key).report(message);
    return false;
  }
  Path field(llvm::StringRef key) { return path.field(key); }

private:
  const json::Object &object;
  Path path;
};

bool parseDevice(const json::Object &o, Path path,
                 HardwareProfile &profile) {
  Reader r(o, path);
  if (!r.string("kind", profile.deviceKind))
    return false;
  if (profile.deviceKind != "gpu" && profile.deviceKind != "cpu")
    return r.fail("kind", "expected \"gpu\" or \"cpu\"");
  if (!r.string("model", profile.deviceModel) ||
      !r.integer("memory_bytes", profile.memoryBytes) ||
      !r.number("memory_bandwidth", profile.memoryBandwidth) ||
      !r.number("matmul_efficiency", profile.matmulEfficiency) ||
      !r.number("op_overhead_s", profile.opOverhead, true, false) ||
      !r.number("vector_flops_per_s", profile.vectorFlops, false))
    return false;
  if (profile.matmulEfficiency > 1)
    return r.fail("matmul_efficiency", "expected a share of peak in (0, 1]");
  const json::Object *peaks = r.child("peak_flops");
  if (!peaks)
    return false;
  Reader p(*peaks, r.field("peak_flops"));
  for (const auto &[key, value] : *peaks) {
    double flops = 0;
    if (!p.number(key, flops))
      return false;
    profile.peakFlops[key.str()] = flops;
  }
  if (!profile.peakFlops.count("f32"))
    return p.fail("f32", "missing (the peak of f32, the fallback type)");
  return true;
}

bool parseLinks(const json::Object &root, Path path,
                HardwareProfile &profile) {
  Reader r(root, path);
  if (!r.integer("devices_per_node", profile.devicesPerNode))
    return false;
  const json::Object *classes = r.child("link_classes");
  if (!classes)
    return false;
  Path classesPath = r.field("link_classes");
  for (const auto &[key, value] : *classes) {
    const json::Object *c = value.getAsObject();
    if (!c) {
      classesPath.field(key).report("expected an object");
      return false;
    }
    LinkClass link;
    link.name = key.str();
    Reader cr(*c, classesPath.field(key));
    if (!cr.number("alpha_s", link.alpha, true, false) ||
        !cr.number("beta_bytes_per_s", link.beta))
      return false;
    profile.linkClasses[link.name] = link;
  }
  if (!r.string("inter_node", profile.interNode))
    return false;
  if (!profile.linkClasses.count(profile.interNode))
    return r.fail("inter_node", "names no class of link_classes");
  const json::Array *rows = r.array("intra_node");
  if (!rows)
    return false;
  Path rowsPath = r.field("intra_node");
  int64_t n = profile.devicesPerNode;
  if (int64_t(rows->size()) != n)
    return r.fail("intra_node",
                  llvm::formatv("expected {0} rows (devices_per_node), got {1}",
                                n, rows->size())
                      .str());
  for (auto [i, row] : llvm::enumerate(*rows)) {
    const json::Array *cells = row.getAsArray();
    if (!cells || int64_t(cells->size()) != n) {
      rowsPath.index(i).report(
          llvm::formatv("expected an array of {0} class names", n).str());
      return false;
    }
    std::vector<std::string> names;
    for (auto [j, cell] : llvm::enumerate(*cells)) {
      std::optional<llvm::StringRef> s = cell.getAsString();
      bool diagonal = int64_t(i) == int64_t(j);
      if (!s || (diagonal ? *s != "self"
                          : !profile.linkClasses.count(s->str()))) {
        rowsPath.index(i).index(j).report(
            diagonal ? "expected \"self\" on the diagonal"
                     : "expected the name of a class of link_classes");
        return false;
      }
      names.push_back(s->str());
    }
    profile.intraNode.push_back(std::move(names));
  }
  return true;
}

bool parseCalibration(const json::Object &o, Path path,
                      HardwareProfile &profile) {
  Reader r(o, path);
  std::string tool, host, date;
  r.string("tool", tool, false);
  r.string("host", host, false);
  r.string("date", date, false);
  profile.calibration = llvm::formatv("{0} on {1} at {2}",
                                      tool.empty() ? "calibration" : tool,
                                      host.empty() ? "?" : host,
                                      date.empty() ? "?" : date);
  if (!r.number("elementwise_bandwidth", profile.elementwiseBandwidth, false))
    return false;
  if (const json::Array *samples = r.array("matmul", false)) {
    Path samplesPath = r.field("matmul");
    for (auto [i, v] : llvm::enumerate(*samples)) {
      const json::Object *s = v.getAsObject();
      if (!s) {
        samplesPath.index(i).report("expected an object");
        return false;
      }
      Reader sr(*s, samplesPath.index(i));
      MatmulSample sample;
      if (!sr.integer("m", sample.m) || !sr.integer("n", sample.n) ||
          !sr.integer("k", sample.k) || !sr.string("dtype", sample.dtype) ||
          !sr.number("flops_per_s", sample.flopsPerSecond))
        return false;
      if (const json::Value *t = s->get("transpose_lhs")) {
        std::optional<bool> b = t->getAsBoolean();
        if (!b) {
          samplesPath.index(i).field("transpose_lhs").report(
              "expected true or false");
          return false;
        }
        sample.transposedLhs = *b;
      }
      profile.matmul.push_back(sample);
    }
  }
  const json::Object *collectives = r.child("collectives", false);
  if (!collectives)
    return true;
  Path collectivesPath = r.field("collectives");
  for (CommPattern kind :
       {CommPattern::AllReduce, CommPattern::AllGather,
        CommPattern::ReduceScatter, CommPattern::SendRecv}) {
    const char *key = commPatternName(kind);
    const json::Value *v = collectives->get(key);
    if (!v)
      continue;
    const json::Array *fits = v->getAsArray();
    if (!fits) {
      collectivesPath.field(key).report("expected an array");
      return false;
    }
    for (auto [i, f] : llvm::enumerate(*fits)) {
      const json::Object *fo = f.getAsObject();
      Path fitPath = collectivesPath.field(key).index(i);
      if (!fo) {
        fitPath.report("expected an object");
        return false;
      }
      Reader fr(*fo, fitPath);
      CollectiveFit fit;
      if (!fr.integer("ranks", fit.ranks) ||
          !fr.number("alpha_s", fit.alpha, true, false) ||
          !fr.number("beta_bytes_per_s", fit.beta))
        return false;
      profile.collectives[kind].push_back(fit);
    }
  }
  return true;
}

bool parseProfile(const json::Value &value, Path path,
                  HardwareProfile &profile) {
  const json::Object *root = value.getAsObject();
  if (!root) {
    path.report("expected a JSON object");
    return false;
  }
  Reader r(*root, path);
  std::string schema;
  if (!r.string("schema", schema))
    return false;
  if (schema != "rtx-hardware-profile/1")
    return r.fail("schema", "expected \"rtx-hardware-profile/1\"");
  if (!r.string("name", profile.name))
    return false;
  r.string("description", profile.description, false);
  const json::Array *sources = r.array("sources");
  if (!sources)
    return false;
  for (auto [i, s] : llvm::enumerate(*sources)) {
    std::optional<llvm::StringRef> text = s.getAsString();
    if (!text) {
      r.field("sources").index(i).report("expected a string");
      return false;
    }
    profile.sources.push_back(text->str());
  }
  if (profile.sources.empty())
    return r.fail("sources", "expected where the figures come from");
  const json::Object *device = r.child("device");
  if (!device || !parseDevice(*device, r.field("device"), profile))
    return false;
  if (!parseLinks(*root, path, profile))
    return false;
  if (const json::Object *calibration = r.child("calibration", false))
    return parseCalibration(*calibration, r.field("calibration"), profile);
  return true;
}
} // namespace

llvm::Expected<HardwareProfile>
mlir::rtx::parseHardwareProfile(llvm::StringRef text, llvm::StringRef origin) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value)
    return llvm::createStringError(
        llvm::formatv("hardware profile '{0}': {1}", origin,
                      llvm::toString(value.takeError()))
            .str());
  HardwareProfile profile;
  ParseError error;
  if (!parseProfile(*value, Path{"", &error}, profile))
    return llvm::createStringError(
        llvm::formatv("hardware profile '{0}': {1}", origin, error.message)
            .str());
  return profile;
}

std::vector<std::string> mlir::rtx::builtinProfileNames() {
  std::vector<std::string> names;
  for (const BuiltinProfile &p : kBuiltinProfiles)
    names.push_back(p.name);
  return names;
}

std::optional<llvm::StringRef>
mlir::rtx::builtinProfileText(llvm::StringRef name) {
  for (const BuiltinProfile &p : kBuiltinProfiles)
    if (name == p.name)
      return llvm::StringRef(p.text);
  return std::nullopt;
}

llvm::Expected<HardwareProfile>
mlir::rtx::loadHardwareProfile(llvm::StringRef nameOrPath) {
  if (std::optional<llvm::StringRef> text = builtinProfileText(nameOrPath))
    return parseHardwareProfile(*text, nameOrPath);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(nameOrPath);
  if (!file)
    return llvm::createStringError(
        llvm::formatv("hardware profile '{0}' is neither a built-in profile "
                      "({1}) nor a readable file: {2}",
                      nameOrPath, llvm::join(builtinProfileNames(), ", "),
                      file.getError().message())
            .str());
  return parseHardwareProfile((*file)->getBuffer(), nameOrPath);
}
