//===- LauncherProcess.cpp - rtx-launch's own process ---------------------===//

#include "LauncherProcess.h"

#include <csignal>

#include <unistd.h>

namespace {
volatile sig_atomic_t received = 0;
void onSignal(int signal) { received = signal; }
} // namespace

void rtxlaunch::forwardSignals() {
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int rtxlaunch::forwardedSignal() { return received; }

std::string rtxlaunch::launcherName() {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(getpid());
}
