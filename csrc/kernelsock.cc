#include "kernelsock.h"

#include "errors.h"
#include "sockdiag.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>

#include <cstdint>
#include <functional>

namespace fastsock {
namespace {

constexpr int kAfSmc = 43;
constexpr uint8_t kSmcListen = 10;  // SMC_LISTEN, net/smc/smc.h (== TCP_LISTEN)

// linux/smc_diag.h, declared here so that the build needs no rdma headers (that header includes
// rdma/ib_user_verbs.h). A stable kernel ABI.
struct SmcDiagReq {
  uint8_t diag_family;
  uint8_t pad[2];
  uint8_t diag_ext;  // bit (1 << (ext - 1)) asks for extension `ext`
  inet_diag_sockid id;
};
struct SmcDiagMsg {
  uint8_t diag_family;
  uint8_t diag_state;
  uint8_t diag_mode;  // 0 SMC-R, 1 TCP fallback, 2 SMC-D
  uint8_t diag_shutdown;
  inet_diag_sockid id;  // addresses and ports of the internal TCP socket (clcsock)
  uint32_t diag_uid;
  alignas(8) uint64_t diag_inode;
};
constexpr uint16_t kSmcDiagFallback = 5;  // SMC_DIAG_FALLBACK: { u32 reason, u32 peer_diagnosis }

// Dumps every AF_SMC socket through smc_diag, calling `each(msg, fallback or null)`. Returns 0,
// or -errno when the dump cannot be made (-EAFNOSUPPORT without smc_diag).
int DumpSmc(const std::function<void(const SmcDiagMsg&, const uint32_t* fallback)>& each) {
  SmcDiagReq req;
  memset(&req, 0, sizeof req);
  req.diag_family = kAfSmc;
  req.diag_ext = 1u << (kSmcDiagFallback - 1);
  int rc = SockDiagDump(&req, sizeof req, [&](const nlmsghdr* h) {
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(SmcDiagMsg))) return;
    const SmcDiagMsg* m = static_cast<const SmcDiagMsg*>(NLMSG_DATA(h));
    const uint32_t* fallback = nullptr;
    // Attributes follow the message, each 4-aligned.
    const char* p = static_cast<const char*>(NLMSG_DATA(h)) + NLMSG_ALIGN(sizeof(SmcDiagMsg));
    const char* end = reinterpret_cast<const char*>(h) + h->nlmsg_len;
    while (p + sizeof(nlattr) <= end) {
      const nlattr* a = reinterpret_cast<const nlattr*>(p);
      if (a->nla_len < sizeof(nlattr) || p + a->nla_len > end) break;
      if ((a->nla_type & NLA_TYPE_MASK) == kSmcDiagFallback && a->nla_len >= NLA_HDRLEN + 8)
        fallback = reinterpret_cast<const uint32_t*>(p + NLA_HDRLEN);
      p += NLA_ALIGN(a->nla_len);
    }
    each(*m, fallback);
  });
  return rc == -ENOENT ? -EAFNOSUPPORT : rc;  // ENOENT: no smc_diag handler
}

// SO_SNDBUF/SO_RCVBUF to `bytes` (the FORCE variants where permitted), before connect or listen:
// AF_SMC sizes a connection's send buffer and RMB from them when it is set up.
void SizeBuffers(int fd, int bytes) {
  if (bytes <= 0) return;
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

int OptionalBytes(const Napi::CallbackInfo& info, size_t i) {
  return info.Length() > i && info[i].IsNumber() ? info[i].As<Napi::Number>().Int32Value() : 0;
}

bool IpArgs(const Napi::CallbackInfo& info, size_t first, sockaddr_storage* ss, socklen_t* len) {
  if (info.Length() < first + 3 || !info[first].IsNumber() || !info[first + 1].IsTypedArray() || !info[first + 2].IsNumber())
    return false;
  int ipFamily = info[first].As<Napi::Number>().Int32Value();
  Napi::Uint8Array a = info[first + 1].As<Napi::Uint8Array>();
  uint32_t port = info[first + 2].As<Napi::Number>().Uint32Value();
  if (port > 0xffff) return false;
  memset(ss, 0, sizeof *ss);
  if (ipFamily == 4 && a.ByteLength() == 4) {
    sockaddr_in* s4 = reinterpret_cast<sockaddr_in*>(ss);
    s4->sin_family = AF_INET;
    s4->sin_port = htons(static_cast<uint16_t>(port));
    memcpy(&s4->sin_addr, a.Data(), 4);
    *len = sizeof *s4;
    return true;
  }
  if (ipFamily == 6 && a.ByteLength() == 16) {
    sockaddr_in6* s6 = reinterpret_cast<sockaddr_in6*>(ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(static_cast<uint16_t>(port));
    memcpy(&s6->sin6_addr, a.Data(), 16);
    *len = sizeof *s6;
    return true;
  }
  return false;
}

}  // namespace

bool CollectSmcListeners(int port, std::vector<SmcListener>* out) {
  // Asked once per process: on a kernel without AF_SMC, both socket(AF_SMC) and smc_diag make the
  // kernel run modprobe on every call.
  static const bool have_smc = [] {
    int fd = socket(kAfSmc, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    close(fd);
    return true;
  }();
  if (!have_smc) return false;
  return DumpSmc([&](const SmcDiagMsg& m, const uint32_t*) {
    if (m.diag_state != kSmcListen || ntohs(m.id.idiag_sport) != port) return;
    SmcListener l;
    memcpy(l.addr, m.id.idiag_src, 16);
    l.inode = static_cast<unsigned long>(m.diag_inode);
    out->push_back(l);
  }) == 0;
}

Napi::Value ConnectStreamJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  sockaddr_storage ss;
  socklen_t len = 0;
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber() || !IpArgs(info, 2, &ss, &len))
    throw ArgTypeError(env, "connectStream(family, protocol, ipFamily 4|6, addr Uint8Array(4|16), port)");
  int fd = socket(info[0].As<Napi::Number>().Int32Value(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  info[1].As<Napi::Number>().Int32Value());
  if (fd < 0) return Napi::Number::New(env, -errno);
  SizeBuffers(fd, OptionalBytes(info, 5));
  int r;
  do r = connect(fd, reinterpret_cast<sockaddr*>(&ss), len);
  while (r != 0 && errno == EINTR);
  if (r != 0 && errno != EINPROGRESS) {
    int err = errno;
    close(fd);
    return Napi::Number::New(env, -err);
  }
  return Napi::Number::New(env, fd);
}

Napi::Value BindStreamJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  sockaddr_storage ss;
  socklen_t len = 0;
  if (info.Length() < 6 || !info[0].IsNumber() || !info[1].IsNumber() || !IpArgs(info, 2, &ss, &len) || !info[5].IsBoolean())
    throw ArgTypeError(env, "bindStream(family, protocol, ipFamily 4|6, addr Uint8Array(4|16), port, v6only)");
  int fd = socket(info[0].As<Napi::Number>().Int32Value(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  info[1].As<Napi::Number>().Int32Value());
  if (fd < 0) return Napi::Number::New(env, -errno);
  SizeBuffers(fd, OptionalBytes(info, 6));
  int on = 1;
  int v6only = info[5].As<Napi::Boolean>().Value() ? 1 : 0;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      (ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) != 0) ||
      bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    int err = errno;
    close(fd);
    return Napi::Number::New(env, -err);
  }
  return Napi::Number::New(env, fd);
}

Napi::Value UnsentBytesJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) throw ArgTypeError(info.Env(), "unsentBytes(fd)");
  int n = 0;
  if (ioctl(info[0].As<Napi::Number>().Int32Value(), SIOCOUTQNSD, &n) != 0) return Napi::Number::New(info.Env(), -errno);
  return Napi::Number::New(info.Env(), n);
}

Napi::Value SmcDiagJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw ArgTypeError(env, "smcDiag(fd)");
  struct stat st;
  if (fstat(info[0].As<Napi::Number>().Int32Value(), &st) != 0) return Napi::Number::New(env, -errno);
  if (!S_ISSOCK(st.st_mode)) return Napi::Number::New(env, -ENOTSOCK);
  bool found = false;
  SmcDiagMsg hit;
  uint32_t reason = 0, peer = 0;
  int rc = DumpSmc([&](const SmcDiagMsg& m, const uint32_t* fallback) {
    if (found || m.diag_inode != static_cast<uint64_t>(st.st_ino)) return;
    found = true;
    hit = m;
    if (fallback) {
      reason = fallback[0];
      peer = fallback[1];
    }
  });
  if (rc < 0) return Napi::Number::New(env, rc);
  if (!found) return Napi::Number::New(env, -ENOENT);
  Napi::Object o = Napi::Object::New(env);
  o.Set("mode", static_cast<double>(hit.diag_mode));
  o.Set("state", static_cast<double>(hit.diag_state));
  o.Set("fallbackReason", static_cast<double>(reason));
  o.Set("peerDiagnosis", static_cast<double>(peer));
  return o;
}

}  // namespace fastsock
