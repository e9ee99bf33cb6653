//===- TokenData.h - batches of a token file --------------------*- C++ -*-===//

#ifndef RTXRT_LIB_PROGRAM_TOKENDATA_H
#define RTXRT_LIB_PROGRAM_TOKENDATA_H

#include "Groups.h"

#include <string>
#include <vector>

namespace rtxrt::program {

/// A token file: nanoGPT's raw uint16 tokens, or llm.c's .bin (a header of
/// 256 int32 starting with magic 20240520, version 1: uint16 tokens, or
/// version 2: uint32 tokens, the token count at index 2).
std::vector<int64_t> readTokens(const std::string &path);

/// --data FILE feeds the inputs `tokens` and `labels` ([batch, seq]) step by
/// step: batch row b of step t is the window at ((t * batch + b) * seq)
/// modulo the file, and labels are the tokens shifted by one (nanoGPT).
class TokenData {
public:
  /// Throws Error when the program has no inputs `tokens` and `labels`.
  TokenData(const std::string &path, const ProgramSpec &spec, int64_t rank);
  /// Puts this rank's block of step `step`'s batch (0-based, counting the
  /// steps of the runs a --state continues) into `args`.
  void loadBatch(int64_t step, std::vector<Tensor> &args,
                 const ProgramDevice &device) const;

private:
  std::string path_;
  const ProgramSpec &spec_;
  int64_t rank_;
  std::vector<int64_t> tokens_;
  int64_t tokensArg_ = -1, labelsArg_ = -1;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_TOKENDATA_H
