//===- ArgSpec.cpp - one argument of a training step ----------------------===//

#include "rtxrt/core/ArgSpec.h"
#include "rtxrt/core/Random.h"

#include <algorithm>

using namespace rtxrt;

Tensor rtxrt::randomInput(const std::string &name, int64_t seed,
                          const Shape &shape, DType dtype, int64_t bound) {
  Tensor t(shape, dtype);
  uint64_t key = randomKey(seed, "input:" + name);
  if (isFloat(dtype)) {
    for (int64_t i = 0; i < t.numel(); ++i)
      t.setFromDouble(i, normalAt(key, i));
    return t;
  }
  if (dtype == DType::I1)
    bound = 2;
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setFromDouble(
        i, std::min<int64_t>(bound - 1,
                             static_cast<int64_t>(uniformAt(key, i) * bound)));
  return t;
}

std::string rtxrt::stateKeyOf(const ArgSpec &arg) {
  if (!arg.state.empty())
    return arg.state;
  switch (arg.kind) {
  case ArgSpec::Param:
    return "param:" + arg.name;
  case ArgSpec::State:
    return arg.name;
  case ArgSpec::Input:
    break;
  }
  return "";
}

rtxrt::UserBlock rtxrt::userBlockOf(const ArgSpec &arg, const std::string &own,
                                    const Shape &global,
                                    const std::vector<int64_t> &offsets) {
  const PartOf &part = arg.partOf;
  if (part.name.empty() || part.size <= 0 || part.dim < 0 ||
      part.dim >= int64_t(global.size()))
    return {own, global, offsets, false};
  UserBlock user{part.name, global, offsets, true};
  user.global[part.dim] = part.size;
  user.offsets[part.dim] += part.offset;
  return user;
}

rtxrt::CheckpointPlace
rtxrt::checkpointPlaceOf(const ArgSpec &arg, const Shape &global,
                         const std::vector<int64_t> &offsets) {
  std::string key = stateKeyOf(arg);
  UserBlock user = userBlockOf(arg, key, global, offsets);
  if (user.isPart) // the state's kind (param:, exp_avg:) before the name
    user.name = key.substr(0, key.find(':') + 1) + user.name;
  return {user.name, user.global, user.offsets};
}
