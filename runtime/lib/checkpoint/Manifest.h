//===- Manifest.h - the checkpoint's JSON files -----------------*- C++ -*-===//
//
// Encodes and decodes manifest.json and the per-rank index files
// (docs/checkpoint.md, "Files"). Each carries a CRC32C of its own body, so a
// manifest that a bad disk or a stray write changed is refused rather than
// trusted: the JSON parser alone would accept many such changes.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_CHECKPOINT_MANIFEST_H
#define RTXRT_LIB_CHECKPOINT_MANIFEST_H

#include "rtxrt/checkpoint/Checkpoint.h"

#include <string>
#include <utility>
#include <vector>

namespace rtxrt::checkpoint {

/// The file names inside a checkpoint directory.
std::string dataFileName(int64_t rank);
std::string indexFileName(int64_t rank);
inline const char *manifestFileName() { return "manifest.json"; }
/// The steps of the directories named step-N under `root` (a normalized
/// path), ascending, with their paths.
std::vector<std::pair<int64_t, std::string>>
stepDirectories(const std::string &root);

/// The JSON text of `manifest` (an index is a manifest of one writer's
/// chunks, `kind` "index").
std::string encodeManifest(const Manifest &manifest, const std::string &kind);
/// Parses and checks a file written by encodeManifest; throws naming `path`
/// and the field at fault.
Manifest decodeManifest(const std::string &text, const std::string &kind,
                        const std::string &path);

} // namespace rtxrt::checkpoint

#endif // RTXRT_LIB_CHECKPOINT_MANIFEST_H
