#include "rdma/verbs.h"

#if FASTSOCK_HAVE_RDMA
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "callback.h"
#include "native_limits.h"
#include "ip_addr.h"
#include "loop_util.h"
#include "rdma/lib.h"
#include "stream_state.h"
#include "wire/verbs.h"

namespace fastsock {
namespace {

using wire::VerbsHeader;
using wire::VerbsPrivateData;
using wire::VerbsRndvFin;
using wire::VerbsRts;

// wr_id = kind << 56 | index.
constexpr uint64_t kWrRecv = 1ull << 56, kWrSend = 2ull << 56, kWrRead = 3ull << 56;
constexpr uint64_t kWrKindMask = 0xffull << 56;
constexpr uint32_t kMaxRndvChunk = 1u << 30;  // VerbsRts.length is 32 bits; larger writes are split
constexpr int kCloseDrainMs = 300;             // how long close() waits for its last SENDs to complete

// State bits of state(), as ShmEndpoint's.
// kState* bits: csrc/stream_state.h

struct Options {
  uint32_t eager_bytes = 16 * 1024;  // payload bytes per receive/send buffer
  uint32_t credits = 32;             // receive buffers posted (and send buffers)
  uint32_t rndv_threshold = 0;       // 0: choose from measured attributes (client) / take the client's
  size_t reg_cache_bytes = 64u << 20;
};

// The registration cache may pin at most a quarter of RLIMIT_MEMLOCK (some drivers, siw among
// them, enforce it even for root), 64 MiB when unlimited.
size_t DefaultRegCacheBytes() {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) return std::min<size_t>(64u << 20, rl.rlim_cur / 4);
  return 64u << 20;
}

Options ParseOptions(const Napi::Value& v) {
  Options o;
  o.reg_cache_bytes = DefaultRegCacheBytes();
  if (!v.IsObject()) return o;
  Napi::Object obj = v.As<Napi::Object>();
  auto num = [&](const char* k, double lo, double hi, double dflt) {
    Napi::Value x = obj.Get(k);
    if (!x.IsNumber()) return dflt;
    double d = x.As<Napi::Number>().DoubleValue();
    if (!(d >= lo && d <= hi)) throw Napi::RangeError::New(v.Env(), std::string("verbs option ") + k + " out of range");
    return d;
  };
  o.eager_bytes = static_cast<uint32_t>(num("eagerBytes", 256, 1 << 20, o.eager_bytes));
  o.credits = static_cast<uint32_t>(num("credits", 4, 1024, o.credits));
  o.rndv_threshold = static_cast<uint32_t>(num("rndvThreshold", 0, kMaxRndvChunk, 0));
  o.reg_cache_bytes = static_cast<size_t>(num("regCacheBytes", 0, 1ull << 40, static_cast<double>(o.reg_cache_bytes)));
  return o;
}

Napi::Error CodedError(Napi::Env env, const std::string& msg, const char* code, int err = 0) {
  Napi::Error e = Napi::Error::New(env, msg);
  e.Set("code", Napi::String::New(env, code));
  if (err) e.Set("errno", Napi::Number::New(env, -err));
  return e;
}

// Node's name for an errno (ETIMEDOUT, ECONNREFUSED, ...), as libuv reports it.
const char* ErrnoCode(int err) { return uv_err_name(-err); }

void AddrInfo(Napi::Object o, const char* prefix, const sockaddr* sa) {
  int port = 0;
  std::string address = IpName(sa, &port);
  o.Set(std::string(prefix) + "Address", address);
  o.Set(std::string(prefix) + "Port", port);
  o.Set(std::string(prefix) + "Family", sa->sa_family == AF_INET6 ? "IPv6" : "IPv4");
}

// FASTSOCK_DEBUG, as lib/debug.ts reads it: failures that JS only sees as "the peer is gone".
bool DebugOn() {
  static bool on = [] {
    const char* v = getenv("FASTSOCK_DEBUG");
    return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"));
  }();
  return on;
}

// The copy bandwidth of this host (bytes/ns), measured once: half of the eager/rendezvous
// trade-off (an eager byte is copied twice; a rendezvous costs a round trip more).
double CopyBytesPerNs() {
  static double bw = [] {
    const size_t n = 256 * 1024;
    const uint32_t iterations = 8;
    return static_cast<double>(n) * iterations / static_cast<double>(std::max<uint64_t>(MemcpyTimeNs(n, iterations), 1));
  }();
  return bw;
}

// rndvThreshold from measured attributes: the size at which copying the bytes twice (eager:
// into the send buffer, out of the receive buffer) costs as much as the rendezvous' extra round
// trip (RTS, READ, FIN), rounded up to a power of two, within [eager bytes, 4 MiB].
uint32_t ChooseThreshold(uint64_t rtt_ns, uint32_t eager_bytes) {
  double bytes = static_cast<double>(rtt_ns) * CopyBytesPerNs() / 2.0;
  uint32_t t = eager_bytes;
  while (t < bytes && t < (4u << 20)) t <<= 1;
  return t;
}

// ---------------------------------------------------------------------------------------------
// Registration cache. Keeps memory regions for the caller's buffers, LRU by bytes. Each entry
// holds a strong reference to its ArrayBuffer, so the memory cannot be freed and its address
// reused under a live registration (the classic registration-cache hazard that UCX solves with
// memory hooks). Entries in use by a rendezvous are never evicted.
struct RegEntry {
  uint8_t* addr = nullptr;
  size_t len = 0;
  ibv_mr* mr = nullptr;
  Napi::Reference<Napi::Value> keep;
  int inflight = 0;
  bool cached = false;
};

class RegCache {
 public:
  RegCache(const RdmaLib* L, ibv_pd* pd, size_t capacity) : L_(L), pd_(pd), capacity_(capacity) {}
  ~RegCache() { Clear(); }

  // A registration covering [p, p + len) of the ArrayBuffer `ab` (base, ab_len): a cached one
  // when possible (the whole ArrayBuffer is registered, so later views of it hit), else a
  // transient one for just that range. Null with *err = errno on failure.
  RegEntry* Get(Napi::Value ab, uint8_t* base, size_t ab_len, uint8_t* p, size_t len, int* err) {
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      RegEntry* e = it->get();
      if (p >= e->addr && p + len <= e->addr + e->len) {
        hits_++;
        lru_.splice(lru_.begin(), lru_, it);
        e->inflight++;
        return e;
      }
    }
    misses_++;
    bool cache = ab_len <= capacity_ && !ab.IsUndefined();
    uint8_t* addr = cache ? base : p;
    size_t n = cache ? ab_len : len;
    if (cache) Evict(n);
    ibv_mr* mr = (L_->ibv_reg_mr)(pd_, addr, n, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
    if (!mr) {
      *err = errno ? errno : ENOMEM;
      if (DebugOn()) fprintf(stderr, "fastsock %d verbs: registering %zu bytes failed: %s\n", getpid(), n, strerror(*err));
      return nullptr;
    }
    auto e = std::make_unique<RegEntry>();
    e->addr = addr;
    e->len = n;
    e->mr = mr;
    e->inflight = 1;
    e->cached = cache;
    if (!ab.IsUndefined()) e->keep = Napi::Persistent(ab);
    RegEntry* raw = e.get();
    if (cache) {
      bytes_ += n;
      lru_.push_front(std::move(e));
    } else {
      transient_.push_back(std::move(e));
    }
    return raw;
  }

  void Release(RegEntry* e) {
    if (!e) return;
    e->inflight--;
    if (e->cached || e->inflight > 0) return;
    for (auto it = transient_.begin(); it != transient_.end(); ++it) {
      if (it->get() == e) {
        L_->ibv_dereg_mr(e->mr);
        transient_.erase(it);
        return;
      }
    }
  }

  // Deregisters every cached entry no rendezvous is using.
  void EvictIdle() { Evict(SIZE_MAX / 2); }

  void Clear() {
    for (auto& e : lru_) L_->ibv_dereg_mr(e->mr);
    for (auto& e : transient_) L_->ibv_dereg_mr(e->mr);
    lru_.clear();
    transient_.clear();
    bytes_ = 0;
  }

  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
  size_t bytes_ = 0;
  size_t entries() const { return lru_.size(); }

 private:
  void Evict(size_t need) {
    for (auto it = lru_.end(); (need > capacity_ || bytes_ + need > capacity_) && it != lru_.begin();) {
      --it;
      if ((*it)->inflight > 0) continue;
      L_->ibv_dereg_mr((*it)->mr);
      bytes_ -= (*it)->len;
      evictions_++;
      it = lru_.erase(it);
    }
  }

  const RdmaLib* L_;
  ibv_pd* pd_;
  size_t capacity_;
  std::list<std::unique_ptr<RegEntry>> lru_;
  std::list<std::unique_ptr<RegEntry>> transient_;
};

// ---------------------------------------------------------------------------------------------
// One connection: the RDMA CM id and its event channel, the queue pair and its buffers, the
// stream state. Set-up (resolve, connect or accept) and the data path both live here;
// VerbsEndpoint is its JS face once established.
struct RxItem {
  enum Kind { kData, kRts, kFin } kind = kData;
  // kData: bytes [off, off + len) of receive buffer `slot`.
  uint32_t slot = 0, off = 0, len = 0;
  // kRts: the announced bytes; where they are READ to, and how far they have been consumed.
  VerbsRts rts{};
  enum RtsState { kNew, kReading, kDone } state = kNew;
  uint8_t* dest = nullptr;
  RegEntry* reg = nullptr;
  Napi::Reference<Napi::Value> keep;  // the destination (a Buffer, or the reader's view)
  bool as_buffer = false;             // dest is a fresh Buffer that read() may hand out whole
  uint32_t consumed = 0;
};

class Conn {
 public:
  enum class Phase { kResolving, kConnecting, kAccepting, kEstablished, kDead };

  Conn(napi_env env, const Options& o) : env_(env), L_(Rdma()), opt_(o) {}
  ~Conn() {
    if (alive_) *alive_ = false;
    Destroy();
  }

  // ----- set-up -----
  // Client: resolve `dst` (PS_IB; iWARP devices restart in PS_TCP on iwarp_port), connect.
  bool StartConnect(const sockaddr_storage& dst, int iwarp_port, int timeout_ms, std::string* err);
  // Server: adopt the id of a CONNECT_REQUEST (already acked), with the client's private data.
  bool StartAccept(rdma_cm_id* id, const VerbsPrivateData& peer, std::string* err);

  std::function<void(int err, const std::string& msg)> on_setup;  // 0: established
  std::function<void()> on_event;                                    // data-path progress

  // ----- data path (the VerbsEndpoint methods) -----
  size_t Write(Napi::Value view, uint8_t* p, size_t len);
  size_t ReadInto(Napi::Value view, uint8_t* p, size_t len);
  Napi::Value Read(Napi::Env env, size_t max);
  // Bytes a read can take now, counting at most up to `max` (the queue is walked in order).
  size_t Readable(size_t max = SIZE_MAX);
  // Readable() > 0, in O(1): only the head of the stream decides it.
  bool HasReadable() const;
  size_t Writable() const;
  bool ArmRead();
  bool ArmWrite() const;
  int State();
  void Shutdown();
  void Close(bool reset);
  void SetRefed(bool on);
  void SetPollUs(double us) { poll_ns_ = static_cast<uint64_t>(us * 1000); }
  Napi::Object Stats(Napi::Env env) const;
  Napi::Object Info(Napi::Env env) const;

  uint64_t bytes_written_ = 0, bytes_read_ = 0;
  bool closed_ = false;

 private:
  bool CreateChannel(std::string* err);
  bool SetupQp(std::string* err);
  // This end's private data (wire/verbs.h), and the connection parameters carrying it: the
  // READ depths the device allows, and the largest retry counts (7: retry for ever on RNR).
  VerbsPrivateData PrivateData() const {
    return {wire::kVerbsMagic, wire::kVerbsVersion, 0, opt_.eager_bytes, opt_.credits, rndv_threshold_, 0};
  }
  rdma_conn_param ConnParam(const VerbsPrivateData* mine) const {
    rdma_conn_param cp{};
    cp.private_data = mine;
    cp.private_data_len = sizeof *mine;
    cp.responder_resources = static_cast<uint8_t>(resp_res_);
    cp.initiator_depth = static_cast<uint8_t>(init_depth_);
    cp.retry_count = 7;
    cp.rnr_retry_count = 7;
    return cp;
  }
  void OnCmEvent();
  void HandleCm(rdma_cm_event* ev);
  void Fail(int err, const std::string& msg);
  void Established(const void* pdata, uint8_t plen);
  void OnCq();
  int ProcessCq();  // completions handled
  void HandleWc(const ibv_wc& wc);
  void PostRecv(uint32_t slot);
  void Consumed(uint32_t slot);
  bool PostSend(uint8_t type, const void* body, uint32_t body_len, const uint8_t* payload, uint32_t payload_len);
  bool CanSendData() const { return credits_ >= 2 && !free_slots_.empty() && !closed_ && !peer_gone_ && !fin_sent_; }
  void FlushControl();
  void MaybeReturnCredits();
  void StartRead(RxItem& it);
  void FinishRts(RxItem& it);
  // Declines the rendezvous at the head of the stream (RNDV_FIN "declined"): the writer sends
  // those bytes eager instead.
  void DeclineRts();
  // Registers a READ destination for `it` (the reader's view when `view` holds at least the
  // announced bytes, else a fresh Buffer) and starts the READ; false when no memory could be
  // registered even after evicting idle cache entries: the rendezvous is then declined.
  bool StartRendezvousRead(RxItem& it, Napi::Env env, Napi::Value view, uint8_t* p, size_t len);
  void PopFin();
  void Notify();
  void Destroy();

  napi_env env_;
  const RdmaLib* L_;
  Options opt_;
  Phase phase_ = Phase::kResolving;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* comp_ = nullptr;
  ibv_cq* cq_ = nullptr;
  uint8_t* recv_pool_ = nullptr;
  uint8_t* send_pool_ = nullptr;
  ibv_mr* recv_mr_ = nullptr;
  ibv_mr* send_mr_ = nullptr;
  std::unique_ptr<RegCache> cache_;
  uv_poll_t* cm_poll_ = nullptr;
  uv_poll_t* cq_poll_ = nullptr;
  uv_timer_t* timer_ = nullptr;
  bool refed_ = true;
  // set-up
  sockaddr_storage dst_{};
  int iwarp_port_ = 0;
  int timeout_ms_ = 0;
  bool restarted_ = false;
  uint64_t connect_start_ns_ = 0;
  // negotiated
  uint32_t slot_bytes_ = 0;      // header + payload bytes per buffer (both pools)
  uint32_t peer_eager_ = 0;      // the peer's receive payload size
  uint32_t rndv_threshold_ = 0;
  uint32_t resp_res_ = 1, init_depth_ = 1;
  // flow control
  uint32_t credits_ = 0;         // SENDs we may post (peer receive buffers known free)
  uint32_t pending_return_ = 0;  // our receive buffers re-posted and not yet reported
  bool peer_starved_ = false;
  std::vector<uint32_t> free_slots_;
  uint32_t outstanding_sends_ = 0;
  // control messages waiting for a credit
  std::deque<VerbsRndvFin> fins_to_send_;  // RNDV_FINs waiting for a send slot and a credit
  bool fin_wanted_ = false, fin_sent_ = false;
  // receive side
  std::deque<RxItem> rxq_;
  bool fin_seen_ = false, reset_ = false, peer_gone_ = false;
  // transmit rendezvous (one at a time: the stream writes in order)
  struct {
    bool active = false, done = false;
    uint8_t* addr = nullptr;
    uint32_t len = 0, id = 0, status = 0;
    RegEntry* reg = nullptr;
  } tx_;
  uint32_t next_rndv_id_ = 1;
  uint64_t poll_ns_ = 0;
  bool in_cq_ = false;
  bool* alive_ = nullptr;  // cleared by the destructor: a callback may delete this connection
  // statistics
  uint64_t rndv_declined_ = 0;
  uint64_t rndv_sent_ = 0, rndv_received_ = 0, rndv_direct_ = 0, eager_sent_ = 0, credit_msgs_ = 0, starved_ = 0;
};

bool Conn::CreateChannel(std::string* err) {
  channel_ = L_->rdma_create_event_channel();
  if (!channel_) {
    *err = std::string("rdma_create_event_channel: ") + strerror(errno);
    return false;
  }
  cm_poll_ = WatchReadable(env_, channel_->fd, this, [](uv_poll_t* h, int, int) {
    if (h->data) static_cast<Conn*>(h->data)->OnCmEvent();
  });
  return true;
}

bool Conn::StartConnect(const sockaddr_storage& dst, int iwarp_port, int timeout_ms, std::string* err) {
  dst_ = dst;
  iwarp_port_ = iwarp_port;
  timeout_ms_ = timeout_ms;
  connect_start_ns_ = NowNs();
  if (!channel_ && !CreateChannel(err)) return false;
  rdma_port_space ps = restarted_ ? RDMA_PS_TCP : RDMA_PS_IB;
  if (L_->rdma_create_id(channel_, &id_, this, ps) != 0) {
    *err = std::string("rdma_create_id: ") + strerror(errno);
    return false;
  }
  if (L_->rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&dst_), timeout_ms) != 0) {
    *err = std::string("rdma_resolve_addr: ") + strerror(errno);
    return false;
  }
  phase_ = Phase::kResolving;
  if (!timer_) {
    uv_loop_t* loop = nullptr;
    napi_get_uv_event_loop(env_, &loop);
    timer_ = new uv_timer_t;
    uv_timer_init(loop, timer_);
    timer_->data = this;
    uv_timer_start(timer_, [](uv_timer_t* t) {
      if (t->data) static_cast<Conn*>(t->data)->Fail(ETIMEDOUT, "RDMA CM set-up timed out");
    }, static_cast<uint64_t>(timeout_ms), 0);
  }
  return true;
}

bool Conn::StartAccept(rdma_cm_id* id, const VerbsPrivateData& peer, std::string* err) {
  id_ = id;
  id_->context = this;
  phase_ = Phase::kAccepting;
  if (!CreateChannel(err)) return false;
  if (L_->rdma_migrate_id(id_, channel_) != 0) {
    *err = std::string("rdma_migrate_id: ") + strerror(errno);
    return false;
  }
  peer_eager_ = peer.eager_bytes;
  credits_ = peer.credits;
  rndv_threshold_ = opt_.rndv_threshold ? opt_.rndv_threshold : std::max(peer.rndv_threshold, opt_.eager_bytes);
  if (!SetupQp(err)) return false;
  VerbsPrivateData mine = PrivateData();
  rdma_conn_param cp = ConnParam(&mine);
  if (L_->rdma_accept(id_, &cp) != 0) {
    *err = std::string("rdma_accept: ") + strerror(errno);
    return false;
  }
  return true;
}

bool Conn::SetupQp(std::string* err) {
  ibv_context* ctx = id_->verbs;
  ibv_device_attr attr{};
  if (L_->ibv_query_device(ctx, &attr) == 0) {
    resp_res_ = std::max(1, std::min(attr.max_qp_rd_atom, 4));
    init_depth_ = std::max(1, std::min(attr.max_qp_init_rd_atom, 4));
  }
  pd_ = L_->ibv_alloc_pd(ctx);
  comp_ = pd_ ? L_->ibv_create_comp_channel(ctx) : nullptr;
  const uint32_t n = opt_.credits;
  cq_ = comp_ ? L_->ibv_create_cq(ctx, static_cast<int>(2 * n + 16), this, comp_, 0) : nullptr;
  if (!cq_) {
    *err = std::string("verbs resources: ") + strerror(errno);
    return false;
  }
  slot_bytes_ = static_cast<uint32_t>(sizeof(VerbsHeader)) + std::max<uint32_t>(opt_.eager_bytes, sizeof(VerbsRts));
  recv_pool_ = static_cast<uint8_t*>(aligned_alloc(4096, ((size_t)n * slot_bytes_ + 4095) & ~size_t{4095}));
  send_pool_ = static_cast<uint8_t*>(aligned_alloc(4096, ((size_t)n * slot_bytes_ + 4095) & ~size_t{4095}));
  if (!recv_pool_ || !send_pool_) {
    *err = "out of memory for the eager buffers";
    return false;
  }
  recv_mr_ = (L_->ibv_reg_mr)(pd_, recv_pool_, (size_t)n * slot_bytes_, IBV_ACCESS_LOCAL_WRITE);
  send_mr_ = recv_mr_ ? (L_->ibv_reg_mr)(pd_, send_pool_, (size_t)n * slot_bytes_, 0) : nullptr;
  if (!send_mr_) {
    *err = std::string("ibv_reg_mr (eager buffers): ") + strerror(errno);
    return false;
  }
  cache_ = std::make_unique<RegCache>(L_, pd_, opt_.reg_cache_bytes);
  ibv_qp_init_attr qa{};
  qa.send_cq = cq_;
  qa.recv_cq = cq_;
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 1;
  qa.cap.max_send_wr = n + 8;
  qa.cap.max_recv_wr = n;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  if (L_->rdma_create_qp(id_, pd_, &qa) != 0) {
    *err = std::string("rdma_create_qp: ") + strerror(errno);
    return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    free_slots_.push_back(n - 1 - i);
    PostRecv(i);
  }
  pending_return_ = 0;  // the initial buffers are announced in the private data
  if (ibv_req_notify_cq(cq_, 0) != 0) {
    *err = "ibv_req_notify_cq failed";
    return false;
  }
  cq_poll_ = WatchReadable(env_, comp_->fd, this, [](uv_poll_t* h, int, int) {
    if (h->data) static_cast<Conn*>(h->data)->OnCq();
  });
  if (!refed_) {
    uv_unref(reinterpret_cast<uv_handle_t*>(cq_poll_));
  }
  return true;
}

void Conn::OnCmEvent() {
  rdma_cm_event* ev = nullptr;
  bool alive = true;
  alive_ = &alive;
  while (channel_ && L_->rdma_get_cm_event(channel_, &ev) == 0) {
    HandleCm(ev);  // acks
    if (!alive) return;  // a set-up callback deleted this connection
  }
  alive_ = nullptr;
}

void Conn::HandleCm(rdma_cm_event* ev) {
  rdma_cm_event_type type = ev->event;
  int status = ev->status;
  uint8_t pdata[64] = {0};
  uint8_t plen = 0;
  if (type == RDMA_CM_EVENT_ESTABLISHED || type == RDMA_CM_EVENT_REJECTED || type == RDMA_CM_EVENT_CONNECT_RESPONSE) {
    plen = std::min<uint8_t>(ev->param.conn.private_data_len, sizeof pdata);
    if (ev->param.conn.private_data) memcpy(pdata, ev->param.conn.private_data, plen);
  }
  L_->rdma_ack_cm_event(ev);
  std::string err;
  switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (phase_ != Phase::kResolving) return;
      if (id_->verbs && id_->verbs->device->transport_type == IBV_TRANSPORT_IWARP && !restarted_) {
        // iWARP: RDMA CM connections are kernel TCP connections, in the TCP port space, where
        // the server's own TCP listener holds the port: the verbs listener is on iwarp_port.
        restarted_ = true;
        L_->rdma_destroy_id(id_);
        id_ = nullptr;
        if (dst_.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&dst_)->sin_port = htons(static_cast<uint16_t>(iwarp_port_));
        else reinterpret_cast<sockaddr_in6*>(&dst_)->sin6_port = htons(static_cast<uint16_t>(iwarp_port_));
        if (!StartConnect(dst_, iwarp_port_, timeout_ms_, &err)) Fail(errno ? errno : EIO, err);
        return;
      }
      if (L_->rdma_resolve_route(id_, timeout_ms_) != 0) Fail(errno, std::string("rdma_resolve_route: ") + strerror(errno));
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      if (phase_ != Phase::kResolving) return;
      if (!SetupQp(&err)) return Fail(ENOMEM, err);
      uint64_t rtt = NowNs() - connect_start_ns_;  // two resolutions: about a round trip or more
      rndv_threshold_ = opt_.rndv_threshold ? opt_.rndv_threshold : ChooseThreshold(rtt / 2, opt_.eager_bytes);
      VerbsPrivateData mine = PrivateData();
      rdma_conn_param cp = ConnParam(&mine);
      phase_ = Phase::kConnecting;
      if (L_->rdma_connect(id_, &cp) != 0) Fail(errno, std::string("rdma_connect: ") + strerror(errno));
      return;
    }
    case RDMA_CM_EVENT_ESTABLISHED:
      if (phase_ == Phase::kConnecting || phase_ == Phase::kAccepting) Established(pdata, plen);
      return;
    case RDMA_CM_EVENT_ADDR_ERROR:
      return Fail(status ? -status : EHOSTUNREACH, "RDMA address resolution failed (no RDMA device reaches it)");
    case RDMA_CM_EVENT_ROUTE_ERROR:
      return Fail(status ? -status : ENETUNREACH, "RDMA route resolution failed");
    case RDMA_CM_EVENT_UNREACHABLE:
      return Fail(EHOSTUNREACH, "RDMA peer unreachable");
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return Fail(ECONNRESET, "RDMA CM connect error");
    case RDMA_CM_EVENT_REJECTED: {
      std::string why = "rejected by the peer (nobody listens with RDMA CM there)";
      VerbsPrivateData p{};
      if (plen >= sizeof p) {
        memcpy(&p, pdata, sizeof p);
        if (p.magic == wire::kVerbsMagic) why = "rejected by the fastsock peer (reason " + std::to_string(p.reject_reason) + ")";
      }
      return Fail(ECONNREFUSED, why);
    }
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      if (phase_ != Phase::kEstablished) return Fail(ECONNRESET, "disconnected during set-up");
      if (DebugOn()) fprintf(stderr, "fastsock %d verbs: %s\n", getpid(), L_->rdma_event_str(type));
      if (!closed_) ProcessCq();  // bytes that arrived before the disconnect come first
      peer_gone_ = true;
      Notify();
      return;
    default:
      return;
  }
}

void Conn::Established(const void* pdata, uint8_t plen) {
  if (phase_ == Phase::kConnecting) {
    VerbsPrivateData p{};
    if (plen < sizeof p) return Fail(EPROTO, "the RDMA peer sent no fastsock private data");
    memcpy(&p, pdata, sizeof p);
    if (p.magic != wire::kVerbsMagic || p.version != wire::kVerbsVersion)
      return Fail(EPROTO, "the RDMA peer speaks another protocol or version");
    if (p.eager_bytes < sizeof(VerbsRts) || p.credits < 4) return Fail(EPROTO, "the RDMA peer's buffers are too small");
    peer_eager_ = p.eager_bytes;
    credits_ = p.credits;
  }
  phase_ = Phase::kEstablished;
  if (timer_) {
    timer_->data = nullptr;
    uv_timer_stop(timer_);
    CloseHandle(timer_);
    timer_ = nullptr;
  }
  auto cb = std::move(on_setup);
  on_setup = nullptr;
  if (cb) cb(0, "");
}

void Conn::Fail(int err, const std::string& msg) {
  if (phase_ == Phase::kEstablished || phase_ == Phase::kDead) return;
  auto cb = std::move(on_setup);
  on_setup = nullptr;
  Destroy();
  phase_ = Phase::kDead;
  if (cb) cb(err ? err : EIO, msg);  // may delete `this`
}

void Conn::PostRecv(uint32_t slot) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(recv_pool_ + (size_t)slot * slot_bytes_), slot_bytes_, recv_mr_->lkey};
  ibv_recv_wr wr{}, *bad = nullptr;
  wr.wr_id = kWrRecv | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (ibv_post_recv(id_->qp, &wr, &bad) == 0) pending_return_++;
}

void Conn::Consumed(uint32_t slot) {
  if (closed_ || peer_gone_) return;
  PostRecv(slot);
  MaybeReturnCredits();
}

bool Conn::PostSend(uint8_t type, const void* body, uint32_t body_len, const uint8_t* payload, uint32_t payload_len) {
  bool control = type != wire::kVerbsData && type != wire::kVerbsRts;
  if (free_slots_.empty() || credits_ < (control ? 1u : 2u) || peer_gone_ || !id_ || !id_->qp) return false;
  uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  uint8_t* buf = send_pool_ + (size_t)slot * slot_bytes_;
  VerbsHeader h{};
  h.type = type;
  h.credits = static_cast<uint16_t>(std::min<uint32_t>(pending_return_, 0xffff));
  pending_return_ -= h.credits;
  if (h.credits) peer_starved_ = false;
  credits_--;
  if (credits_ < 2) {
    h.flags |= wire::kVerbsFlagStarved;
    starved_++;
  }
  h.length = payload_len;
  memcpy(buf, &h, sizeof h);
  if (body_len) memcpy(buf + sizeof h, body, body_len);
  if (payload_len) memcpy(buf + sizeof h, payload, payload_len);
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(sizeof h + body_len + payload_len), send_mr_->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = kWrSend | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (ibv_post_send(id_->qp, &wr, &bad) != 0) {
    free_slots_.push_back(slot);
    credits_++;
    pending_return_ += h.credits;
    return false;
  }
  outstanding_sends_++;
  if (type == wire::kVerbsCredit) credit_msgs_++;
  return true;
}

void Conn::FlushControl() {
  while (!fins_to_send_.empty()) {
    if (!PostSend(wire::kVerbsRndvFin, &fins_to_send_.front(), sizeof(VerbsRndvFin), nullptr, 0)) return;
    fins_to_send_.pop_front();
  }
  if (fin_wanted_ && !fin_sent_ && !tx_.active) {
    if (PostSend(wire::kVerbsFin, nullptr, 0, nullptr, 0)) fin_sent_ = true;
  }
}

void Conn::MaybeReturnCredits() {
  FlushControl();
  if (pending_return_ == 0) return;
  if (pending_return_ >= std::max<uint32_t>(1, opt_.credits / 4) || peer_starved_) {
    PostSend(wire::kVerbsCredit, nullptr, 0, nullptr, 0);
  }
}

void Conn::OnCq() {
  if (closed_ || !cq_) return;
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  while (L_->ibv_get_cq_event(comp_, &ev_cq, &ev_ctx) == 0) L_->ibv_ack_cq_events(ev_cq, 1);
  ibv_req_notify_cq(cq_, 0);
  int n = ProcessCq();
  if (n > 0) Notify();
  // iodev's polling-then-blocking: for a bounded time, look for the next completion before
  // sleeping on the channel again (a wake-up through the kernel costs far more here).
  if (poll_ns_ > 0 && !closed_) {
    uint64_t until = NowNs() + poll_ns_;
    while (!closed_ && cq_ && NowNs() < until) {
      if (ProcessCq() > 0) {
        Notify();
        until = NowNs() + poll_ns_;
      } else {
        CpuRelax();
      }
    }
  }
}

int Conn::ProcessCq() {
  if (!cq_ || in_cq_) return 0;
  in_cq_ = true;
  int total = 0;
  ibv_wc wc[16];
  for (;;) {
    int n = ibv_poll_cq(cq_, 16, wc);
    if (n <= 0) break;
    for (int i = 0; i < n; i++) HandleWc(wc[i]);
    total += n;
  }
  in_cq_ = false;
  if (total > 0 && !closed_) MaybeReturnCredits();
  return total;
}

void Conn::HandleWc(const ibv_wc& wc) {
  uint64_t kind = wc.wr_id & kWrKindMask;
  uint32_t idx = static_cast<uint32_t>(wc.wr_id & ~kWrKindMask);
  if (kind == kWrSend) {
    outstanding_sends_--;
    free_slots_.push_back(idx);
  }
  if (wc.status != IBV_WC_SUCCESS) {
    if (DebugOn() && wc.status != IBV_WC_WR_FLUSH_ERR)
      fprintf(stderr, "fastsock %d verbs: work request %s failed: %s (vendor error 0x%x)\n", getpid(),
              kind == kWrRead ? "RDMA READ" : kind == kWrSend ? "SEND" : "RECV", L_->ibv_wc_status_str(wc.status), wc.vendor_err);
    // A flushed work request: the queue pair is down (we or the peer disconnected).
    if (!closed_) peer_gone_ = true;
    return;
  }
  if (kind == kWrRead) {
    for (auto& it : rxq_) {
      if (it.kind == RxItem::kRts && it.rts.id == idx && it.state == RxItem::kReading) {
        it.state = RxItem::kDone;
        rndv_received_++;
        // The bytes are in this end's memory: the writer may reuse its array now, whenever
        // the reader consumes them.
        FinishRts(it);
        break;
      }
    }
    return;
  }
  if (kind != kWrRecv) return;
  if (wc.byte_len < sizeof(VerbsHeader)) return Consumed(idx);  // not a message of this protocol
  uint8_t* buf = recv_pool_ + (size_t)idx * slot_bytes_;
  VerbsHeader h;
  memcpy(&h, buf, sizeof h);
  credits_ += h.credits;
  if (h.flags & wire::kVerbsFlagStarved) peer_starved_ = true;
  switch (h.type) {
    case wire::kVerbsData:
      if (h.length == 0 || h.length > wc.byte_len - sizeof h) return Consumed(idx);
      rxq_.push_back(RxItem{});
      rxq_.back().kind = RxItem::kData;
      rxq_.back().slot = idx;
      rxq_.back().off = sizeof h;
      rxq_.back().len = h.length;
      return;
    case wire::kVerbsRts: {
      RxItem it;
      it.kind = RxItem::kRts;
      memcpy(&it.rts, buf + sizeof h, sizeof it.rts);
      rxq_.push_back(std::move(it));
      return Consumed(idx);
    }
    case wire::kVerbsRndvFin: {
      VerbsRndvFin f;
      memcpy(&f, buf + sizeof h, sizeof f);
      if (tx_.active && f.id == tx_.id) {
        tx_.done = true;
        tx_.status = f.status;
        // Declined (the reader could not register memory): the bytes go eager instead. Any
        // other status: the peer's READ failed, the stream is broken.
        if (f.status != 0 && f.status != wire::kVerbsRndvDeclined) peer_gone_ = true;
      }
      return Consumed(idx);
    }
    case wire::kVerbsFin:
      rxq_.push_back(RxItem{});
      rxq_.back().kind = RxItem::kFin;
      return Consumed(idx);
    case wire::kVerbsRst:
      reset_ = true;
      return Consumed(idx);
    default:  // kVerbsCredit, or unknown (ignored, as the spec says)
      return Consumed(idx);
  }
}

void Conn::Notify() {
  if (on_event) on_event();
}

void Conn::PopFin() {
  if (!rxq_.empty() && rxq_.front().kind == RxItem::kFin) {
    rxq_.pop_front();
    fin_seen_ = true;
  }
}

void Conn::StartRead(RxItem& it) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(it.dest), it.rts.length, it.reg->mr->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = kWrRead | it.rts.id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = it.rts.addr;
  wr.wr.rdma.rkey = it.rts.rkey;
  int rc = ibv_post_send(id_->qp, &wr, &bad);
  if (rc != 0) {
    if (DebugOn()) fprintf(stderr, "fastsock %d verbs: posting an RDMA READ of %u bytes failed: %s\n", getpid(), it.rts.length, strerror(rc));
    peer_gone_ = true;
    return;
  }
  it.state = RxItem::kReading;
}

void Conn::FinishRts(RxItem& it) {
  cache_->Release(it.reg);
  it.reg = nullptr;
  fins_to_send_.push_back({it.rts.id, 0});
  FlushControl();
}

void Conn::DeclineRts() {
  fins_to_send_.push_back({rxq_.front().rts.id, wire::kVerbsRndvDeclined});
  rxq_.pop_front();
  FlushControl();
}

bool Conn::StartRendezvousRead(RxItem& it, Napi::Env env, Napi::Value view, uint8_t* p, size_t len) {
  for (int attempt = 0; attempt < 2 && !it.reg; attempt++) {
    if (attempt == 1) cache_->EvictIdle();  // pinned-memory limit (RLIMIT_MEMLOCK): make room
    int err = 0;
    if (len >= it.rts.length && !view.IsUndefined()) {
      // The reader waits for at least this many bytes: READ straight into its array.
      Napi::Value ab = ArrayBufferOf(view);
      Napi::ArrayBuffer a = ab.As<Napi::ArrayBuffer>();
      it.reg = cache_->Get(ab, static_cast<uint8_t*>(a.Data()), a.ByteLength(), p, it.rts.length, &err);
      if (it.reg) {
        it.dest = p;
        it.keep = Napi::Persistent(view);
        rndv_direct_++;
        break;
      }
    }
    Napi::Buffer<uint8_t> b = Napi::Buffer<uint8_t>::New(env, it.rts.length);
    it.reg = cache_->Get(env.Undefined(), nullptr, 0, b.Data(), it.rts.length, &err);
    if (it.reg) {
      it.dest = b.Data();
      it.as_buffer = true;
      it.keep = Napi::Persistent(Napi::Value(b));
    }
  }
  if (!it.reg) {
    rndv_declined_++;
    return false;
  }
  StartRead(it);
  return true;
}

size_t Conn::Write(Napi::Value view, uint8_t* p, size_t len) {
  if (closed_ || peer_gone_ || reset_ || fin_sent_ || phase_ != Phase::kEstablished || len == 0) return 0;
  bool declined = false;
  if (len >= rndv_threshold_) {
    uint32_t chunk = static_cast<uint32_t>(std::min<size_t>(len, kMaxRndvChunk));
    if (tx_.active) {
      if (!tx_.done || tx_.addr != p || tx_.len != chunk) return 0;
      cache_->Release(tx_.reg);
      tx_.active = false;
      FlushControl();
      if (tx_.status == 0) {
        bytes_written_ += chunk;
        return chunk;
      }
      declined = true;  // the reader declined: send this chunk eager (below)
    }
    if (!declined && !CanSendData()) return 0;
    Napi::Value ab = ArrayBufferOf(view);
    uint8_t* base = p;
    size_t ab_len = len;
    if (!ab.IsUndefined()) {
      base = static_cast<uint8_t*>(ab.As<Napi::ArrayBuffer>().Data());
      ab_len = ab.As<Napi::ArrayBuffer>().ByteLength();
    }
    int err = 0;
    RegEntry* reg = declined ? nullptr : cache_->Get(ab, base, ab_len, p, chunk, &err);
    if (reg) {
      VerbsRts r{reinterpret_cast<uintptr_t>(p), reg->mr->rkey, chunk, next_rndv_id_++, 0};
      if (!PostSend(wire::kVerbsRts, &r, sizeof r, nullptr, 0)) {
        cache_->Release(reg);
        return 0;
      }
      tx_.active = true;
      tx_.done = false;
      tx_.addr = p;
      tx_.len = chunk;
      tx_.id = r.id;
      tx_.reg = reg;
      rndv_sent_++;
      return 0;
    }
    // Declined, or registration failed (locked-memory limit, ...): this chunk goes eager.
    if (declined) len = chunk;
  }
  size_t done = 0;
  uint32_t max = std::min(peer_eager_, opt_.eager_bytes);
  while (done < len && CanSendData()) {
    uint32_t n = static_cast<uint32_t>(std::min<size_t>(len - done, max));
    if (!PostSend(wire::kVerbsData, nullptr, 0, p + done, n)) break;
    done += n;
    eager_sent_++;
  }
  bytes_written_ += done;
  return done;
}

size_t Conn::ReadInto(Napi::Value view, uint8_t* p, size_t len) {
  size_t done = 0;
  while (done < len && !rxq_.empty()) {
    RxItem& it = rxq_.front();
    if (it.kind == RxItem::kFin) break;
    if (it.kind == RxItem::kData) {
      size_t n = std::min<size_t>(len - done, it.len);
      memcpy(p + done, recv_pool_ + (size_t)it.slot * slot_bytes_ + it.off, n);
      done += n;
      it.off += static_cast<uint32_t>(n);
      it.len -= static_cast<uint32_t>(n);
      if (it.len == 0) {
        uint32_t slot = it.slot;
        rxq_.pop_front();
        Consumed(slot);
      }
      continue;
    }
    // Rendezvous.
    if (it.state == RxItem::kNew) {
      if (done > 0 || closed_ || peer_gone_) break;
      if (StartRendezvousRead(it, view.Env(), view, p, len)) break;
      DeclineRts();  // the writer sends these bytes eager instead; they follow in order
      continue;
    }
    if (it.state != RxItem::kDone) break;
    size_t left = it.rts.length - it.consumed;
    size_t n = std::min(len - done, left);
    if (p + done != it.dest + it.consumed) memcpy(p + done, it.dest + it.consumed, n);
    done += n;
    it.consumed += static_cast<uint32_t>(n);
    if (it.consumed == it.rts.length) rxq_.pop_front();
  }
  bytes_read_ += done;
  return done;
}

Napi::Value Conn::Read(Napi::Env env, size_t max) {
  if (rxq_.empty()) return env.Null();
  RxItem& it = rxq_.front();
  if (it.kind == RxItem::kRts && it.state == RxItem::kDone && it.as_buffer) {
    // The READ landed in a Buffer of its own: hand it out without a copy, whole or in views of
    // at most `max` bytes. What the reader has not taken stays here, so it counts as unread
    // (a RST at close, as TCP with bytes in its receive queue) and keeps the stream's order.
    size_t left = it.rts.length - it.consumed;
    Napi::Value whole = it.keep.Value();
    Napi::Value out;
    if (it.consumed == 0 && left <= max) {
      out = whole;
    } else {
      size_t n = std::min(left, max);
      Napi::Uint8Array u8 = whole.As<Napi::Uint8Array>();
      out = Napi::Uint8Array::New(env, n, u8.ArrayBuffer(), u8.ByteOffset() + it.consumed);
    }
    size_t n = out.As<Napi::Uint8Array>().ByteLength();
    bytes_read_ += n;
    it.consumed += static_cast<uint32_t>(n);
    if (it.consumed == it.rts.length) rxq_.pop_front();
    return out;
  }
  if (it.kind == RxItem::kRts && it.state == RxItem::kNew) {
    if (!StartRendezvousRead(it, env, env.Undefined(), nullptr, 0)) DeclineRts();
    return env.Null();
  }
  size_t n = Readable(max);
  if (n == 0) return env.Null();
  Napi::Buffer<uint8_t> b = Napi::Buffer<uint8_t>::New(env, n);
  ReadInto(b, b.Data(), n);  // n <= Readable(): fills it
  return b;
}

size_t Conn::Readable(size_t max) {
  size_t n = 0;
  for (auto& it : rxq_) {
    if (it.kind == RxItem::kFin || n >= max) break;
    if (it.kind == RxItem::kData) {
      n += it.len;
      continue;
    }
    if (it.state != RxItem::kDone) break;
    n += it.rts.length - it.consumed;
  }
  return std::min(n, max);
}

bool Conn::HasReadable() const {
  if (rxq_.empty()) return false;
  const RxItem& it = rxq_.front();
  return it.kind == RxItem::kData || (it.kind == RxItem::kRts && it.state == RxItem::kDone);
}

size_t Conn::Writable() const {
  if (tx_.active || credits_ < 2) return 0;
  return static_cast<size_t>(std::min<uint32_t>(credits_ - 1, static_cast<uint32_t>(free_slots_.size()))) *
         std::min(peer_eager_, opt_.eager_bytes);
}

bool Conn::ArmRead() {
  // Events always come (every completion notifies); "retry now" only when bytes wait already.
  PopFin();
  return !HasReadable() && !(!rxq_.empty() && rxq_.front().kind == RxItem::kRts && rxq_.front().state == RxItem::kNew);
}

bool Conn::ArmWrite() const {
  if (tx_.active) return !tx_.done;
  return !(credits_ >= 2 && !free_slots_.empty());
}

int Conn::State() {
  PopFin();
  int s = 0;
  if (fin_seen_) s |= kStateEof;
  if (reset_) s |= kStateReset;
  if (peer_gone_) s |= kStateGone;
  if (closed_) s |= kStateClosed;
  if (HasReadable()) s |= kStateReadable;
  return s;
}

void Conn::Shutdown() {
  if (closed_) return;
  fin_wanted_ = true;
  FlushControl();
}

void Conn::Close(bool reset) {
  if (closed_) return;
  if (phase_ != Phase::kEstablished) {
    closed_ = true;
    Destroy();
    return;
  }
  bool unread = false;
  for (auto& it : rxq_)
    if (it.kind != RxItem::kFin) unread = true;
  if (!peer_gone_ && id_ && id_->qp) {
    if (reset || unread) {
      PostSend(wire::kVerbsRst, nullptr, 0, nullptr, 0);
    } else {
      fin_wanted_ = true;
      tx_.active = false;  // a write still in rendezvous is abandoned (its callback gets EPIPE)
      FlushControl();
    }
    // Wait (bounded) until the last SENDs completed: disconnecting flushes what is still queued.
    uint64_t until = NowNs() + kCloseDrainMs * 1000000ull;
    while (outstanding_sends_ > 0 && !peer_gone_ && NowNs() < until) {
      if (ProcessCq() == 0) {
        timespec ts{0, 50000};
        nanosleep(&ts, nullptr);
      }
    }
  }
  closed_ = true;
  Destroy();
}

void Conn::SetRefed(bool on) {
  refed_ = on;
  for (uv_poll_t* h : {cq_poll_, cm_poll_}) {
    if (!h) continue;
    if (on) uv_ref(reinterpret_cast<uv_handle_t*>(h));
    else uv_unref(reinterpret_cast<uv_handle_t*>(h));
  }
}

void Conn::Destroy() {
  for (uv_poll_t** h : {&cq_poll_, &cm_poll_}) {
    if (*h) {
      (*h)->data = nullptr;
      ClosePoll(*h);
      *h = nullptr;
    }
  }
  if (timer_) {
    timer_->data = nullptr;
    uv_timer_stop(timer_);
    CloseHandle(timer_);
    timer_ = nullptr;
  }
  if (id_ && L_) {
    if (phase_ == Phase::kEstablished) L_->rdma_disconnect(id_);
    if (id_->qp) L_->rdma_destroy_qp(id_);
  }
  for (auto& it : rxq_) it.reg = nullptr;  // the cache owns every registration
  rxq_.clear();
  cache_.reset();
  if (recv_mr_) L_->ibv_dereg_mr(recv_mr_);
  if (send_mr_) L_->ibv_dereg_mr(send_mr_);
  recv_mr_ = send_mr_ = nullptr;
  free(recv_pool_);
  free(send_pool_);
  recv_pool_ = send_pool_ = nullptr;
  if (cq_) L_->ibv_destroy_cq(cq_);
  cq_ = nullptr;
  if (comp_) L_->ibv_destroy_comp_channel(comp_);
  comp_ = nullptr;
  if (pd_) L_->ibv_dealloc_pd(pd_);
  pd_ = nullptr;
  if (id_) L_->rdma_destroy_id(id_);
  id_ = nullptr;
  if (channel_) L_->rdma_destroy_event_channel(channel_);
  channel_ = nullptr;
  if (phase_ == Phase::kEstablished) phase_ = Phase::kDead;
  on_event = nullptr;
}

Napi::Object Conn::Stats(Napi::Env env) const {
  Napi::Object o = Napi::Object::New(env);
  o.Set("eagerBytes", opt_.eager_bytes);
  o.Set("peerEagerBytes", peer_eager_);
  o.Set("recvBuffers", opt_.credits);
  o.Set("credits", credits_);
  o.Set("rndvThreshold", rndv_threshold_);
  o.Set("eagerSent", static_cast<double>(eager_sent_));
  o.Set("rndvSent", static_cast<double>(rndv_sent_));
  o.Set("rndvReceived", static_cast<double>(rndv_received_));
  o.Set("rndvDirect", static_cast<double>(rndv_direct_));
  o.Set("rndvDeclined", static_cast<double>(rndv_declined_));
  o.Set("creditMessages", static_cast<double>(credit_msgs_));
  o.Set("starved", static_cast<double>(starved_));
  o.Set("regCacheHits", static_cast<double>(cache_ ? cache_->hits_ : 0));
  o.Set("regCacheMisses", static_cast<double>(cache_ ? cache_->misses_ : 0));
  o.Set("regCacheEvictions", static_cast<double>(cache_ ? cache_->evictions_ : 0));
  o.Set("regCacheBytes", static_cast<double>(cache_ ? cache_->bytes_ : 0));
  o.Set("regCacheEntries", static_cast<double>(cache_ ? cache_->entries() : 0));
  o.Set("regCacheCapacity", static_cast<double>(opt_.reg_cache_bytes));
  o.Set("device", id_ && id_->verbs ? L_->ibv_get_device_name(id_->verbs->device) : "");
  o.Set("iwarp", id_ && id_->verbs && id_->verbs->device->transport_type == IBV_TRANSPORT_IWARP);
  return o;
}

Napi::Object Conn::Info(Napi::Env env) const {
  Napi::Object o = Napi::Object::New(env);
  if (!id_) return o;
  AddrInfo(o, "local", &id_->route.addr.src_addr);
  AddrInfo(o, "remote", &id_->route.addr.dst_addr);
  o.Set("device", id_->verbs ? L_->ibv_get_device_name(id_->verbs->device) : "");
  return o;
}

// ---------------------------------------------------------------------------------------------
class VerbsEndpoint : public Napi::ObjectWrap<VerbsEndpoint> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "VerbsEndpoint",
                       {
                           InstanceMethod("write", &VerbsEndpoint::Write),
                           InstanceMethod("readInto", &VerbsEndpoint::ReadInto),
                           InstanceMethod("read", &VerbsEndpoint::Read),
                           InstanceMethod("readable", &VerbsEndpoint::Readable),
                           InstanceMethod("writable", &VerbsEndpoint::Writable),
                           InstanceMethod("armRead", &VerbsEndpoint::ArmRead),
                           InstanceMethod("armWrite", &VerbsEndpoint::ArmWrite),
                           InstanceMethod("state", &VerbsEndpoint::State),
                           InstanceMethod("shutdown", &VerbsEndpoint::Shutdown),
                           InstanceMethod("close", &VerbsEndpoint::Close),
                           InstanceMethod("ref", &VerbsEndpoint::Ref),
                           InstanceMethod("unref", &VerbsEndpoint::Unref),
                           InstanceMethod("counters", &VerbsEndpoint::Counters),
                           InstanceMethod("setPollUs", &VerbsEndpoint::SetPollUs),
                           InstanceMethod("setOnEvent", &VerbsEndpoint::SetOnEvent),
                           InstanceMethod("stats", &VerbsEndpoint::Stats),
                       });
  }

  // new VerbsEndpoint(external<Conn>): only from C++ (a connection just established).
  explicit VerbsEndpoint(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VerbsEndpoint>(info) {
    if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), "VerbsEndpoint is made by verbsConnect / VerbsListener");
    conn_.reset(info[0].As<Napi::External<Conn>>().Data());
    async_ = std::make_unique<Napi::AsyncContext>(info.Env(), "FASTSOCK_VERBS");
    conn_->on_event = [this] { Notify(); };
    env_ = info.Env();
    napi_add_env_cleanup_hook(env_, CleanupHook, this);
  }
  ~VerbsEndpoint() override {
    napi_remove_env_cleanup_hook(env_, CleanupHook, this);
    if (conn_) conn_->Close(true);
  }

 private:
  static void CleanupHook(void* arg) {
    // The environment is going away: as a kernel does for a TCP socket of an exiting process, a
    // FIN (or a RST when bytes were left unread), then the resources.
    auto* self = static_cast<VerbsEndpoint*>(arg);
    if (self->conn_) self->conn_->Close(false);
  }

  void Notify() {
    if (onevent_.IsEmpty() || !conn_ || conn_->closed_) return;
    Napi::HandleScope scope(env_);
    CallFromLoop(env_, onevent_.Value(), Value(), 0, nullptr, *async_);
  }

  Conn& C(const Napi::CallbackInfo& info) {
    if (!conn_) throw Napi::Error::New(info.Env(), "verbs endpoint closed");
    return *conn_;
  }
  static uint8_t* View(const Napi::CallbackInfo& info, size_t* len) {
    uint8_t* p = info.Length() > 0 ? BytesOf(info[0], len) : nullptr;
    if (!p && !(info.Length() > 0 && (info[0].IsTypedArray() || info[0].IsDataView())))
      throw Napi::TypeError::New(info.Env(), "a TypedArray or DataView is required");
    return p;
  }

  Napi::Value Write(const Napi::CallbackInfo& info) {
    size_t len = 0;
    uint8_t* p = View(info, &len);
    if (conn_->closed_) return Napi::Number::New(info.Env(), 0);
    return Napi::Number::New(info.Env(), static_cast<double>(C(info).Write(info[0], p, len)));
  }
  Napi::Value ReadInto(const Napi::CallbackInfo& info) {
    size_t len = 0;
    uint8_t* p = View(info, &len);
    if (conn_->closed_) return Napi::Number::New(info.Env(), 0);
    return Napi::Number::New(info.Env(), static_cast<double>(C(info).ReadInto(info[0], p, len)));
  }
  Napi::Value Read(const Napi::CallbackInfo& info) {
    size_t max = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Uint32Value() : 65536;
    if (conn_->closed_) return info.Env().Null();
    return C(info).Read(info.Env(), max ? max : 65536);
  }
  Napi::Value Readable(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), static_cast<double>(C(info).Readable())); }
  Napi::Value Writable(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), static_cast<double>(C(info).Writable())); }
  Napi::Value ArmRead(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), C(info).ArmRead()); }
  Napi::Value ArmWrite(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), C(info).ArmWrite()); }
  Napi::Value State(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), C(info).State()); }
  Napi::Value Shutdown(const Napi::CallbackInfo& info) {
    C(info).Shutdown();
    return info.Env().Undefined();
  }
  Napi::Value Close(const Napi::CallbackInfo& info) {
    bool reset = info.Length() > 0 && info[0].ToBoolean().Value();
    C(info).Close(reset);
    return info.Env().Undefined();
  }
  Napi::Value Ref(const Napi::CallbackInfo& info) {
    C(info).SetRefed(true);
    return info.Env().Undefined();
  }
  Napi::Value Unref(const Napi::CallbackInfo& info) {
    C(info).SetRefed(false);
    return info.Env().Undefined();
  }
  Napi::Value Counters(const Napi::CallbackInfo& info) {
    Napi::Array a = Napi::Array::New(info.Env(), 2);
    a.Set(0u, static_cast<double>(C(info).bytes_written_));
    a.Set(1u, static_cast<double>(C(info).bytes_read_));
    return a;
  }
  Napi::Value SetPollUs(const Napi::CallbackInfo& info) {
    if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(info.Env(), "setPollUs(us)");
    C(info).SetPollUs(info[0].As<Napi::Number>().DoubleValue());
    return info.Env().Undefined();
  }
  Napi::Value SetOnEvent(const Napi::CallbackInfo& info) {
    if (info.Length() < 1 || !info[0].IsFunction()) throw Napi::TypeError::New(info.Env(), "setOnEvent(fn)");
    onevent_ = Napi::Persistent(info[0].As<Napi::Function>());
    return info.Env().Undefined();
  }
  Napi::Value Stats(const Napi::CallbackInfo& info) { return C(info).Stats(info.Env()); }

  std::unique_ptr<Conn> conn_;
  Napi::FunctionReference onevent_;
  std::unique_ptr<Napi::AsyncContext> async_;
  napi_env env_ = nullptr;
};

// Per-environment (main thread, each worker) state of this module.
struct VerbsInstance {
  Napi::FunctionReference endpoint_ctor;
};

// Wraps an established connection in its JS endpoint (which owns it from here on).
Napi::Object WrapConn(Napi::Env env, Conn* c) {
  return env.GetInstanceData<VerbsInstance>()->endpoint_ctor.New({Napi::External<Conn>::New(env, c)});
}

const RdmaLib* NeedRdma(Napi::Env env) {
  const RdmaLib* L = Rdma();
  if (!L->ok) throw CodedError(env, "rdma-core is not available: " + L->error, "ERR_FASTSOCK_NO_RDMA");
  return L;
}

// verbsConnect(addr: string, port, iwarpPort, options, cb(err, endpoint, info)). The callback is
// called exactly once, from the loop.
Napi::Value VerbsConnectJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  NeedRdma(env);
  if (info.Length() < 5 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[4].IsFunction())
    throw Napi::TypeError::New(env, "verbsConnect(addr, port, iwarpPort, options, cb)");
  sockaddr_storage dst;
  if (!ParseIpAddr(info[0].As<Napi::String>().Utf8Value(), info[1].As<Napi::Number>().Int32Value(), &dst))
    throw Napi::TypeError::New(env, "verbsConnect: addr must be an IP address literal");
  Options opt = ParseOptions(info[3]);
  int timeout = 2000;
  if (info[3].IsObject()) {
    Napi::Value t = info[3].As<Napi::Object>().Get("timeoutMs");
    if (t.IsNumber()) timeout = std::max(1, t.As<Napi::Number>().Int32Value());
  }
  auto* c = new Conn(env, opt);
  auto cb = std::make_shared<Napi::FunctionReference>(Napi::Persistent(info[4].As<Napi::Function>()));
  auto ctx = std::make_shared<Napi::AsyncContext>(env, "FASTSOCK_VERBS_CONNECT");
  c->on_setup = [c, cb, ctx, env](int err, const std::string& msg) {
    Napi::HandleScope scope(env);
    if (err) {
      Napi::Error e = CodedError(env, "verbs: " + msg, ErrnoCode(err), err);
      delete c;
      napi_value argv[1] = {e.Value()};
      CallFromLoop(env, cb->Value(), Napi::Env(env).Global(), 1, argv, *ctx);
      return;
    }
    Napi::Object infoObj = c->Info(env);
    Napi::Object ep = WrapConn(env, c);
    napi_value argv[3] = {Napi::Env(env).Null(), ep, infoObj};
    CallFromLoop(env, cb->Value(), Napi::Env(env).Global(), 3, argv, *ctx);
  };
  std::string err;
  if (!c->StartConnect(dst, info[2].As<Napi::Number>().Int32Value(), timeout, &err)) {
    int e = errno ? errno : EIO;
    c->on_setup = nullptr;
    delete c;
    throw CodedError(env, "verbs: " + err, ErrnoCode(e), e);
  }
  return env.Undefined();
}

// new VerbsListener(addr, port, iwarpPort, backlog, options, onconnection(endpoint, info))
// Listens with RDMA CM on addr (a local address of an RDMA device): port `port` in the IB port
// space on InfiniBand/RoCE devices, `iwarpPort` in the TCP port space on iWARP devices (there
// the TCP listener holds `port`). Throws with code (ENODEV: no RDMA device has that address;
// EADDRINUSE). Properties: transport ('ib'|'iwarp'), port (the RDMA CM port), device.
class VerbsListener : public Napi::ObjectWrap<VerbsListener> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "VerbsListener",
                       {InstanceMethod("close", &VerbsListener::Close),
                        InstanceAccessor("transport", &VerbsListener::Transport, nullptr),
                        InstanceAccessor("port", &VerbsListener::Port, nullptr),
                        InstanceAccessor("device", &VerbsListener::Device, nullptr)});
  }

  explicit VerbsListener(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VerbsListener>(info) {
    Napi::Env env = info.Env();
    L_ = NeedRdma(env);
    env_ = env;
    if (info.Length() < 6 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsNumber() ||
        !info[5].IsFunction())
      throw Napi::TypeError::New(env, "VerbsListener(addr, port, iwarpPort, backlog, options, onconnection)");
    std::string addr = info[0].As<Napi::String>().Utf8Value();
    int port = info[1].As<Napi::Number>().Int32Value();
    int iwarp_port = info[2].As<Napi::Number>().Int32Value();
    int backlog = info[3].As<Napi::Number>().Int32Value();
    opt_ = ParseOptions(info[4]);
    onconnection_ = Napi::Persistent(info[5].As<Napi::Function>());
    async_ = std::make_unique<Napi::AsyncContext>(env, "FASTSOCK_VERBS_LISTEN");
    sockaddr_storage ss;
    if (!ParseIpAddr(addr, port, &ss)) throw Napi::TypeError::New(env, "VerbsListener: addr must be an IP address literal");
    channel_ = L_->rdma_create_event_channel();
    if (!channel_) throw CodedError(env, std::string("rdma_create_event_channel: ") + strerror(errno), ErrnoCode(errno), errno);
    auto fail = [&](const char* what) {
      int e = errno;
      std::string msg = std::string(what) + " " + addr + ": " + strerror(e);
      Teardown();
      throw CodedError(env, msg, ErrnoCode(e), e);
    };
    if (L_->rdma_create_id(channel_, &id_, this, RDMA_PS_IB) != 0) fail("rdma_create_id");
    if (L_->rdma_bind_addr(id_, reinterpret_cast<sockaddr*>(&ss)) != 0) fail("rdma_bind_addr");
    if (!id_->verbs) {
      errno = ENODEV;
      fail("no RDMA device has address");
    }
    iwarp_ = id_->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
    device_ = L_->ibv_get_device_name(id_->verbs->device);
    port_ = port;
    if (iwarp_) {
      L_->rdma_destroy_id(id_);
      id_ = nullptr;
      if (ss.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(static_cast<uint16_t>(iwarp_port));
      else reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(static_cast<uint16_t>(iwarp_port));
      port_ = iwarp_port;
      if (L_->rdma_create_id(channel_, &id_, this, RDMA_PS_TCP) != 0) fail("rdma_create_id");
      if (L_->rdma_bind_addr(id_, reinterpret_cast<sockaddr*>(&ss)) != 0) fail("rdma_bind_addr");
    }
    if (L_->rdma_listen(id_, backlog) != 0) fail("rdma_listen");
    poll_ = WatchReadable(env, channel_->fd, this, [](uv_poll_t* h, int, int) {
      if (h->data) static_cast<VerbsListener*>(h->data)->OnEvent();
    });
    uv_unref(reinterpret_cast<uv_handle_t*>(poll_));  // the TCP listener keeps the loop alive
    napi_add_env_cleanup_hook(env, CleanupHook, this);
  }
  ~VerbsListener() override {
    napi_remove_env_cleanup_hook(env_, CleanupHook, this);
    Teardown();
  }

 private:
  static void CleanupHook(void* arg) { static_cast<VerbsListener*>(arg)->Teardown(); }

  void Teardown() {
    for (Conn* c : pending_) delete c;
    pending_.clear();
    if (poll_) {
      poll_->data = nullptr;
      ClosePoll(poll_);
      poll_ = nullptr;
    }
    if (id_) L_->rdma_destroy_id(id_);
    id_ = nullptr;
    if (channel_) L_->rdma_destroy_event_channel(channel_);
    channel_ = nullptr;
  }

  void OnEvent() {
    rdma_cm_event* ev = nullptr;
    while (channel_ && L_->rdma_get_cm_event(channel_, &ev) == 0) {
      if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
        L_->rdma_ack_cm_event(ev);
        continue;
      }
      rdma_cm_id* cid = ev->id;
      VerbsPrivateData p{};
      bool ok = ev->param.conn.private_data_len >= sizeof p && ev->param.conn.private_data;
      if (ok) memcpy(&p, ev->param.conn.private_data, sizeof p);
      ok = ok && p.magic == wire::kVerbsMagic && p.version == wire::kVerbsVersion && p.eager_bytes >= sizeof(VerbsRts) &&
           p.credits >= 4;
      L_->rdma_ack_cm_event(ev);
      if (!ok) {
        VerbsPrivateData rej{wire::kVerbsMagic, wire::kVerbsVersion, wire::kVerbsRejectVersion, 0, 0, 0, 0};
        L_->rdma_reject(cid, &rej, sizeof rej);
        L_->rdma_destroy_id(cid);
        continue;
      }
      auto* c = new Conn(env_, opt_);
      std::string err;
      if (!c->StartAccept(cid, p, &err)) {
        VerbsPrivateData rej{wire::kVerbsMagic, wire::kVerbsVersion, wire::kVerbsRejectResources, 0, 0, 0, 0};
        L_->rdma_reject(cid, &rej, sizeof rej);
        delete c;  // destroys cid
        continue;
      }
      pending_.insert(c);
      c->on_setup = [this, c](int e, const std::string&) {
        pending_.erase(c);
        if (e) {
          delete c;
          return;
        }
        Napi::HandleScope scope(env_);
        Napi::Object infoObj = c->Info(env_);
        Napi::Object ep = WrapConn(env_, c);
        napi_value argv[2] = {ep, infoObj};
        CallFromLoop(env_, onconnection_.Value(), Value(), 2, argv, *async_);
      };
    }
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Teardown();
    return info.Env().Undefined();
  }
  Napi::Value Transport(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), iwarp_ ? "iwarp" : "ib"); }
  Napi::Value Port(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), port_); }
  Napi::Value Device(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), device_); }

  const RdmaLib* L_ = nullptr;
  napi_env env_ = nullptr;
  Options opt_;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  uv_poll_t* poll_ = nullptr;
  bool iwarp_ = false;
  int port_ = 0;
  std::string device_;
  std::set<Conn*> pending_;
  Napi::FunctionReference onconnection_;
  std::unique_ptr<Napi::AsyncContext> async_;
};

}  // namespace

void InitVerbs(Napi::Env env, Napi::Object exports) {
  auto* inst = new VerbsInstance();
  Napi::Function ctor = VerbsEndpoint::Define(env);
  inst->endpoint_ctor = Napi::Persistent(ctor);
  env.SetInstanceData(inst);
  exports.Set("VerbsEndpoint", ctor);
  exports.Set("VerbsListener", VerbsListener::Define(env));
  exports.Set("verbsConnect", Napi::Function::New(env, VerbsConnectJs, "verbsConnect"));
}

}  // namespace fastsock

#else  // !FASTSOCK_HAVE_RDMA

namespace fastsock {
void InitVerbs(Napi::Env, Napi::Object) {}
}  // namespace fastsock

#endif
