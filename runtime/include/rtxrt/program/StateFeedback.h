//===- StateFeedback.h - a step's state into the next step ------*- C++ -*-===//
//
// After each step, every result that carries state (a parameter, a piece of
// optimizer state, a flat buffer of them) becomes the argument with the same
// state key for the next step. Emitted programs' step loop and rtx-run's
// simulated ranks both feed state through this table.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_PROGRAM_STATEFEEDBACK_H
#define RTXRT_PROGRAM_STATEFEEDBACK_H

#include "rtxrt/program/Arguments.h"

#include <string>
#include <vector>

namespace rtxrt {

class StateFeedback {
public:
  /// Feeds nothing back.
  StateFeedback() = default;
  /// `resultStates[i]`: the state key result i carries ("" for none).
  /// Results whose key no argument has are not fed back.
  StateFeedback(const std::vector<ArgSpec> &args,
                const std::vector<std::string> &resultStates);

  /// The argument that result `i` replaces, or -1.
  int64_t argumentOf(size_t i) const {
    return i < argumentOf_.size() ? argumentOf_[i] : -1;
  }
  /// Replaces each argument that a result of the step carries on.
  void apply(std::vector<Tensor> &args,
             const std::vector<Tensor> &results) const;

private:
  std::vector<int64_t> argumentOf_;
};

} // namespace rtxrt

#endif // RTXRT_PROGRAM_STATEFEEDBACK_H
