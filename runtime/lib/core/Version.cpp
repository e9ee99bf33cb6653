//===- Version.cpp - librtxrt version -------------------------------------===//

#include "rtxrt/core/Version.h"

const char *rtxrt::version() { return "0.1.0"; }
