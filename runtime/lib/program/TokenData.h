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

/// The two inputs a token file feeds: the windows and the windows shifted
/// by one.
struct TokenInputs {
  std::string tokens, labels;
};

/// The inputs of `spec` (every pipeline stage's, in a pipelined program)
/// that a token file feeds: `named` when given (--data-inputs), else the
/// one pair of the conventions that the program has: tokens/labels (rtx's
/// builder), idx/targets (nanoGPT's GPT imported from PyTorch), input_ids/
/// labels (Hugging Face). Throws an Error that names the program's inputs
/// and --data-inputs when none (or several) match.
TokenInputs findTokenInputs(const ProgramSpec &spec, const TokenInputs &named);

/// A token file feeding the inputs `inputs.tokens` and `inputs.labels`
/// ([batch, seq]) batch by batch: row b of batch t is the window at
/// ((t * batch + b) * seq) modulo the file, and the labels are the tokens
/// shifted by one (nanoGPT). --data reads batch t at step t + 1;
/// --eval-data reads batches 0 to K - 1 at every evaluation.
class TokenData {
public:
  /// `flag` names the file in messages (--data, --eval-data).
  TokenData(const std::string &path, const std::string &flag,
            const ProgramSpec &spec, const TokenInputs &inputs, int64_t rank);
  /// Puts this rank's block of batch `batch` (0-based; --data: the steps of
  /// the runs a --state continues counted) into `args`.
  void loadBatch(int64_t batch, std::vector<Tensor> &args,
                 const ProgramDevice &device) const;
  /// Throws an Error unless the first `batches` batches are windows that do
  /// not wrap around the file and their ids are in the vocabulary (the
  /// inputs' bounds, where an embedding or a loss gives one).
  void checkBatches(int64_t batches) const;
  /// The global [batch, seq] of a batch.
  int64_t batchRows() const { return rows_; }
  int64_t seqLength() const { return seq_; }

private:
  std::string path_, flag_;
  const ProgramSpec &spec_;
  int64_t rank_;
  std::vector<int64_t> tokens_;
  TokenInputs inputs_;
  /// This rank's arguments of the two inputs (-1: its pipeline stage has
  /// none).
  int64_t tokensArg_ = -1, labelsArg_ = -1;
  /// The global batch shape and the ids' bounds (ArgSpec::bound; 2: none
  /// known), from the program's inputs wherever they are.
  int64_t rows_ = 0, seq_ = 0, tokensBound_ = 2, labelsBound_ = 2;
};

} // namespace rtxrt::program

#endif // RTXRT_LIB_PROGRAM_TOKENDATA_H
