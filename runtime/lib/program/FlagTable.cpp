//===- FlagTable.cpp - command-line flags declared as data ----------------===//

#include "FlagTable.h"

#include "rtxrt/core/Tensor.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace rtxrt;
using namespace rtxrt::program;

FlagSpec FlagSpec::needing(FlagNeeds other) const {
  FlagSpec spec = *this;
  spec.needs = other;
  return spec;
}

FlagSpec rtxrt::program::switchFlag(std::string name, BoolField field,
                                    std::string help) {
  FlagSpec spec;
  spec.name = std::move(name);
  spec.kind = FlagKind::Switch;
  spec.field = field;
  spec.help = std::move(help);
  return spec;
}

FlagSpec rtxrt::program::textFlag(std::string name, std::string metavar,
                                  TextField field, std::string help,
                                  std::string emptyNoun) {
  FlagSpec spec;
  spec.name = std::move(name);
  spec.metavar = std::move(metavar);
  spec.kind = FlagKind::Text;
  spec.field = field;
  spec.emptyNoun = std::move(emptyNoun);
  spec.help = std::move(help);
  return spec;
}

FlagSpec rtxrt::program::numberFlag(std::string name, std::string metavar,
                                    FlagField field, FlagBounds bounds,
                                    std::string help) {
  FlagSpec spec;
  spec.name = std::move(name);
  spec.metavar = std::move(metavar);
  spec.kind = FlagKind::Number;
  spec.field = field;
  spec.bounds = std::move(bounds);
  spec.help = std::move(help);
  return spec;
}

FlagSpec rtxrt::program::customFlag(std::string name, std::string metavar,
                                    CustomParse parse, std::string help) {
  FlagSpec spec;
  spec.name = std::move(name);
  spec.metavar = std::move(metavar);
  spec.kind = FlagKind::Custom;
  spec.custom = parse;
  spec.help = std::move(help);
  return spec;
}

const FlagSpec *rtxrt::program::findFlag(const std::vector<FlagSpec> &table,
                                         const std::string &arg) {
  for (const FlagSpec &spec : table)
    if (arg == spec.name || (!spec.alias.empty() && arg == spec.alias))
      return &spec;
  return nullptr;
}

// The value of a Number row, checked against its bounds.
static double parseNumber(const FlagSpec &spec, const std::string &value) {
  const FlagBounds &bounds = spec.bounds;
  char *end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end)
    throw Error(spec.name + " needs " + bounds.noun + ", got '" + value + "'");
  // NaN compares false, so test for the accepted range, not against it.
  bool aboveMin = bounds.minExclusive ? v > bounds.min : v >= bounds.min;
  if (!(aboveMin && v <= bounds.max) || (bounds.whole && v != std::floor(v)))
    throw Error(spec.name + " needs " + bounds.range + ", got '" + value + "'");
  return v;
}

static void setNumber(const FlagSpec &spec, double v, Flags &flags) {
  if (auto *field = std::get_if<IntField>(&spec.field))
    (*field)(flags) = static_cast<int64_t>(v);
  else if (auto *field = std::get_if<PortField>(&spec.field))
    (*field)(flags) = static_cast<int>(v);
  else if (auto *field = std::get_if<RealField>(&spec.field))
    (*field)(flags) = v;
  else
    throw Error(spec.name + ": its row sets no number (a bug in Flags.cpp)");
}

void rtxrt::program::applyFlag(const FlagSpec &spec, const std::string &value,
                               bool inlineValue, Flags &flags) {
  switch (spec.kind) {
  case FlagKind::Switch:
    if (inlineValue && !value.empty())
      throw Error(spec.name + " takes no value");
    std::get<BoolField>(spec.field)(flags) = true;
    return;
  case FlagKind::Text:
    // An empty value ("--data=", an unset shell variable) would silently
    // mean "none": refuse it.
    if (value.empty())
      throw Error(spec.name + " needs " + spec.emptyNoun +
                  ", got an empty one");
    std::get<TextField>(spec.field)(flags) = value;
    return;
  case FlagKind::Number:
    if (spec.wordField)
      spec.wordField(flags) = !spec.word.empty() && value == spec.word;
    if (spec.wordField && spec.wordField(flags))
      return;
    setNumber(spec, parseNumber(spec, value), flags);
    return;
  case FlagKind::Custom:
    spec.custom(spec.name, value, flags);
    return;
  }
}

void rtxrt::program::printFlagHelp(const std::vector<FlagSpec> &table) {
  // Values start in column 21; a longer name pushes its first line right.
  constexpr size_t kColumn = 18;
  for (const FlagSpec &spec : table) {
    std::string usage = spec.name;
    if (!spec.alias.empty())
      usage += ", " + spec.alias;
    if (!spec.metavar.empty())
      usage += " " + spec.metavar;
    size_t start = 0;
    for (bool first = true; start <= spec.help.size(); first = false) {
      size_t end = spec.help.find('\n', start);
      std::string line = spec.help.substr(
          start, end == std::string::npos ? std::string::npos : end - start);
      if (!first)
        std::printf("%*s%s\n", static_cast<int>(kColumn + 3), "", line.c_str());
      else if (usage.size() <= kColumn)
        std::printf("  %-*s %s\n", static_cast<int>(kColumn), usage.c_str(),
                    line.c_str());
      else
        std::printf("  %s  %s\n", usage.c_str(), line.c_str());
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }
}
