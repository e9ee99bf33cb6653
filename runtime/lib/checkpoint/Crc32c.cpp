//===- Crc32c.cpp - CRC32C through ISA-L ----------------------------------===//

#include "rtxrt/checkpoint/Checkpoint.h"

#include <algorithm>
#include <isa-l/crc.h>

uint32_t rtxrt::checkpoint::crc32c(const void *data, size_t size,
                                   uint32_t crc) {
  // ISA-L's crc32_iscsi keeps the register un-inverted: CRC32C proper
  // starts from ~0 and inverts at the end, so inverting around the call
  // continues a standard CRC ("123456789" -> 0xE3069283).
  auto *bytes = static_cast<unsigned char *>(const_cast<void *>(data));
  uint32_t reg = ~crc;
  // Its length is an int: feed it at most 1 GiB at a time.
  while (size > 0) {
    size_t part = std::min<size_t>(size, size_t(1) << 30);
    reg = crc32_iscsi(bytes, static_cast<int>(part), reg);
    bytes += part;
    size -= part;
  }
  return ~reg;
}
