//===- FlagTable.h - command-line flags declared as data --------*- C++ -*-===//
//
// Each flag of an emitted program is one row: its name, the kind of value
// it takes and the bounds it checks, the field of Flags it sets, the flag it
// needs, and its help. The same rows parse, validate and print --help
// (Flags.cpp holds them), so a flag cannot be parsed one way and documented
// another, and a new flag is one row.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_PROGRAM_FLAGTABLE_H
#define RTXRT_LIB_PROGRAM_FLAGTABLE_H

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace rtxrt::program {

struct Flags;

/// The kind of value a flag takes.
enum class FlagKind {
  Switch, ///< none (--flag=VALUE is refused); sets a bool
  Text,   ///< a non-empty string: a path, an address
  Number, ///< a number within FlagBounds
  Custom, ///< parsed by the row's own function
};

/// The member a row sets, as a function from the flags to it (members of
/// nested structs, such as checkpoint.dir, rule out member pointers).
using BoolField = bool &(*)(Flags &);
using TextField = std::string &(*)(Flags &);
using IntField = int64_t &(*)(Flags &);
using PortField = int &(*)(Flags &);
using RealField = double &(*)(Flags &);
using FlagField = std::variant<std::monostate, BoolField, TextField, IntField,
                               PortField, RealField>;

/// The values a Number accepts, and how a refusal says what was wanted:
/// "FLAG needs NOUN, got 'V'" for a value that is not a number, "FLAG needs
/// RANGE, got 'V'" for one out of bounds (NaN included).
struct FlagBounds {
  double min = 0, max = 0;
  bool minExclusive = false; ///< (min, max] rather than [min, max]
  bool whole = false;        ///< integers only
  std::string noun;          ///< "seconds", "a number of steps"
  std::string range;         ///< "a whole number of steps >= 1"
};

/// Who a flag needs besides itself; checked once every flag is read.
enum class FlagNeeds {
  Nothing,
  Checkpoint,
  Params,
  Trace,
  MetricsPort,
  Data,
  EvalData
};

/// Parses a Custom row's value into the flags; throws Error naming `flag`.
using CustomParse = void (*)(const std::string &flag, const std::string &value,
                             Flags &flags);

/// One flag.
struct FlagSpec {
  std::string name;    ///< "--steps"
  std::string alias;   ///< another spelling ("-h"), or empty
  std::string metavar; ///< its value in the help ("N"); empty for a Switch
  FlagKind kind = FlagKind::Switch;
  FlagField field;
  FlagBounds bounds;     ///< Number
  std::string emptyNoun; ///< Text: what an empty value lacks ("a path")
  std::string word;      ///< Number: a word accepted instead ("auto") ...
  BoolField wordField{}; ///< ... that sets this (and a number clears it)
  CustomParse custom{};  ///< Custom
  FlagNeeds needs = FlagNeeds::Nothing;
  std::string help; ///< lines separated by '\n'

  /// This row, needing `other` too.
  FlagSpec needing(FlagNeeds other) const;
};

/// Rows of each kind.
FlagSpec switchFlag(std::string name, BoolField field, std::string help);
FlagSpec textFlag(std::string name, std::string metavar, TextField field,
                  std::string help, std::string emptyNoun = "a path");
FlagSpec numberFlag(std::string name, std::string metavar, FlagField field,
                    FlagBounds bounds, std::string help);
FlagSpec customFlag(std::string name, std::string metavar, CustomParse parse,
                    std::string help);

/// The row named `arg` (its name or alias), or nullptr.
const FlagSpec *findFlag(const std::vector<FlagSpec> &table,
                         const std::string &arg);

/// Checks `value` against `spec` and sets its field. `inlineValue`: the
/// value came as --flag=VALUE (a Switch refuses one). Throws Error naming
/// the flag.
void applyFlag(const FlagSpec &spec, const std::string &value, bool inlineValue,
               Flags &flags);

/// The rows' help, one flag after another, values aligned in a column.
void printFlagHelp(const std::vector<FlagSpec> &table);

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_FLAGTABLE_H
