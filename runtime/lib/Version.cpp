//===- Version.cpp - librtxrt version -------------------------------------===//

#include "rtxrt/Version.h"

const char *rtxrt::version() { return "0.1.0"; }
