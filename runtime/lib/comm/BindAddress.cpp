//===- BindAddress.cpp - the address a rank's process groups listen on ----===//

#include "BindAddress.h"

#include "rtxrt/core/Tensor.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

using namespace rtxrt;
using namespace rtxrt::detail;

std::vector<InterfaceAddress> detail::interfaceAddresses() {
  std::vector<InterfaceAddress> result;
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0)
    return result;
  for (ifaddrs *i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP))
      continue;
    int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6)
      continue;
    char text[INET6_ADDRSTRLEN] = {0};
    const void *raw =
        family == AF_INET
            ? static_cast<const void *>(
                  &reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr)
            : static_cast<const void *>(
                  &reinterpret_cast<sockaddr_in6 *>(i->ifa_addr)->sin6_addr);
    if (!inet_ntop(family, raw, text, sizeof text))
      continue;
    result.push_back({i->ifa_name, text, family == AF_INET6});
  }
  freeifaddrs(list);
  return result;
}

static bool isLoopback(const std::string &address) {
  return address.rfind("127.", 0) == 0 || address == "::1";
}

/// The addresses `host` resolves to, IPv4 first.
static std::vector<std::string> resolve(const std::string &host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  std::vector<std::string> v4, v6;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0)
    return {};
  for (addrinfo *a = found; a; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {0};
    if (a->ai_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(a->ai_addr)->sin_addr,
                text, sizeof text);
    else if (a->ai_family == AF_INET6)
      inet_ntop(AF_INET6,
                &reinterpret_cast<sockaddr_in6 *>(a->ai_addr)->sin6_addr, text,
                sizeof text);
    else
      continue;
    (a->ai_family == AF_INET ? v4 : v6).push_back(text);
  }
  freeaddrinfo(found);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

static std::string interfaceNames(const std::vector<InterfaceAddress> &all) {
  std::set<std::string> seen;
  std::string names;
  for (const InterfaceAddress &i : all)
    if (seen.insert(i.interface).second)
      names += (names.empty() ? "" : ", ") + i.interface;
  return names.empty() ? "none" : names;
}

std::string
detail::bindAddress(const LaunchEnvironment &launch,
                    const EnvironmentLookup &env,
                    const std::vector<InterfaceAddress> &interfaces) {
  if (const char *address = env("RTX_BIND_ADDR")) {
    if (!*address || resolve(address).empty())
      throw Error(std::string("RTX_BIND_ADDR='") + address +
                  "' is not an address of this machine");
    return address;
  }
  for (const char *variable : {"RTX_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}) {
    const char *value = env(variable);
    if (!value)
      continue;
    std::string name = value;
    name = name.substr(0, name.find(','));
    const InterfaceAddress *v6 = nullptr;
    bool exists = false;
    for (const InterfaceAddress &i : interfaces) {
      if (i.interface != name)
        continue;
      exists = true;
      if (!i.ipv6)
        return i.address;
      if (!v6)
        v6 = &i;
    }
    if (v6)
      return v6->address;
    throw Error(
        std::string(variable) + "='" + value + "': " +
        (exists ? "the interface has no address" : "no such interface is up") +
        " (interfaces with an address: " + interfaceNames(interfaces) + ")");
  }
  if (launch.singleNode())
    return "127.0.0.1";
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::vector<std::string> addresses = resolve(host);
  for (const std::string &address : addresses)
    if (!isLoopback(address))
      return address;
  // Nothing says the run spans nodes (RANK/WORLD_SIZE set by hand): the
  // host name's loopback address connects the ranks of this node.
  bool spansNodes = launch.nodes > 1 || (launch.localWorld >= 0 &&
                                         launch.localWorld < launch.world);
  if (!addresses.empty() && !spansNodes)
    return addresses.front();
  throw Error(std::string("cannot tell which address the other nodes reach "
                          "this one at: the host name '") +
              host + "' resolves to " +
              (addresses.empty() ? "nothing" : addresses.front()) +
              "; set RTX_SOCKET_IFNAME to the network interface (one of: " +
              interfaceNames(interfaces) +
              ") or RTX_BIND_ADDR to this machine's address");
}

std::string detail::bindAddress() {
  EnvironmentLookup env = processEnvironment();
  return bindAddress(readLaunchEnvironment(env), env, interfaceAddresses());
}
