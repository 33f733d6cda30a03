// IP literals <-> sockaddrs, shared by the RDMA rungs (verbs, rsocket). Parsing is libuv's
// (uv_ip4_addr / uv_ip6_addr); both functions are pure and safe on helper threads.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>
#include <uv.h>

#include <cstring>
#include <string>

namespace fastsock {

// An IPv4 or IPv6 literal and a port as a sockaddr; false for anything else. `len`, when given,
// receives the sockaddr's size.
inline bool ParseIpAddr(const std::string& host, int port, sockaddr_storage* ss, socklen_t* len = nullptr) {
  memset(ss, 0, sizeof *ss);
  if (uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(ss)) == 0) {
    if (len) *len = sizeof(sockaddr_in);
    return true;
  }
  if (uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6*>(ss)) == 0) {
    if (len) *len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

// Sets the port of an AF_INET/AF_INET6 sockaddr; returns the sockaddr's size.
inline socklen_t SetIpPort(sockaddr_storage* ss, int port) {
  if (ss->ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(ss)->sin_port = htons(static_cast<uint16_t>(port));
    return sizeof(sockaddr_in);
  }
  reinterpret_cast<sockaddr_in6*>(ss)->sin6_port = htons(static_cast<uint16_t>(port));
  return sizeof(sockaddr_in6);
}

// The address literal of an AF_INET/AF_INET6 sockaddr ("" for other families) and its port.
inline std::string IpName(const sockaddr* sa, int* port) {
  char buf[INET6_ADDRSTRLEN] = "";
  *port = 0;
  if (sa->sa_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(sa);
    uv_ip4_name(a, buf, sizeof buf);
    *port = ntohs(a->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(sa);
    uv_ip6_name(a, buf, sizeof buf);
    *port = ntohs(a->sin6_port);
  }
  return buf;
}

}  // namespace fastsock
