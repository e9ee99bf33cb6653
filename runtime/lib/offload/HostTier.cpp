//===- HostTier.cpp - offloaded values in host memory ---------------------===//

#include "HostTier.h"

#include <cstring>

using namespace rtxrt::offload;

namespace {
struct HostPlace final : Place {
  AlignedBuffer held;
};

unsigned char *heldOf(const Entry &e) {
  return static_cast<HostPlace &>(*e.place).held.get();
}
} // namespace

HostTier::HostTier(Done done)
    : worker_([this](Transfer &t) { return moveNow(t); }, std::move(done)) {}

void HostTier::place(const std::string &key, Entry &e) {
  AlignedBuffer held = allocateAligned(64, e.bytes, "'" + key + "'");
  if (!e.place)
    e.place = std::make_unique<HostPlace>();
  static_cast<HostPlace &>(*e.place).held = std::move(held);
}

int HostTier::moveNow(Transfer &t) {
  unsigned char *held = heldOf(*t.entry);
  std::memcpy(t.write ? held : t.data, t.write ? t.data : held, t.size);
  t.done = t.size;
  return 0;
}

int HostTier::start(Transfer &t) { return worker_.start(t); }

std::string HostTier::where(const Entry &) const { return "host memory"; }
