//===- BindAddress.h - the address a rank's process groups listen on -*- C++
//-*-===//
//
// Private to librtxrt. Gloo's TCP device listens on one address and
// publishes it in the store; the other ranks connect to it, so it must be
// an address they can reach: loopback serves only when every rank runs on
// this node.
//
//===----------------------------------------------------------------------===//

#ifndef RTXRT_LIB_COMM_BINDADDRESS_H
#define RTXRT_LIB_COMM_BINDADDRESS_H

#include "rtxrt/elastic/LaunchEnvironment.h"

#include <string>
#include <vector>

namespace rtxrt {
namespace detail {

/// One address of one network interface.
struct InterfaceAddress {
  std::string interface, address;
  bool ipv6 = false;
};
/// This machine's interfaces' IPv4 and IPv6 addresses (getifaddrs).
std::vector<InterfaceAddress> interfaceAddresses();

/// The address to bind to, in this order:
///  1. RTX_BIND_ADDR (a numeric address or a host name of this machine);
///  2. the first IPv4 address (else IPv6) of the interface named by
///     RTX_SOCKET_IFNAME, else GLOO_SOCKET_IFNAME (Gloo's and PyTorch's
///     variable; its first entry when it lists several);
///  3. 127.0.0.1 when every rank runs on this node;
///  4. the address this machine's host name resolves to, preferring one
///     that is not loopback; a loopback-only answer in a run that spans
///     nodes is an error telling which variable to set.
/// Throws rtxrt::Error naming the variable when it names no address.
std::string bindAddress(const LaunchEnvironment &launch,
                        const EnvironmentLookup &env,
                        const std::vector<InterfaceAddress> &interfaces);
/// The same for this process (its environment and interfaces).
std::string bindAddress();

} // namespace detail
} // namespace rtxrt

#endif // RTXRT_LIB_COMM_BINDADDRESS_H
