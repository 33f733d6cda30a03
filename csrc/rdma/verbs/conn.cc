// Conn's set-up (RDMA CM: resolve, connect or accept), close and teardown. The data path is in
// protocol.cc.
#include "rdma/verbs/conn.h"

#if FASTSOCK_HAVE_RDMA
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "clock.h"
#include "ip_addr.h"
#include "uv_handles.h"

namespace fastsock {
namespace verbs {
namespace {

constexpr int kCloseDrainMs = 300;  // how long Close() waits for its last SENDs to complete

std::string CallFailed(const char* call) { return std::string(call) + ": " + strerror(errno); }

}  // namespace

Conn::Conn(uv_loop_t* loop, const Options& o) : loop_(loop), L_(Rdma()), opt_(o) {}

Conn::~Conn() {
  if (alive_) *alive_ = false;
  Destroy();
}

// This end's private data (wire/verbs.h).
wire::VerbsPrivateData Conn::PrivateData() const {
  return {wire::kVerbsMagic, wire::kVerbsVersion, 0, opt_.eager_bytes, opt_.credits, rndv_threshold_, 0};
}

// The connection parameters carrying `mine`: the READ depths the device allows, and the largest
// retry counts (7: retry for ever on RNR).
rdma_conn_param Conn::ConnParam(const wire::VerbsPrivateData* mine) const {
  rdma_conn_param cp{};
  cp.private_data = mine;
  cp.private_data_len = sizeof *mine;
  cp.responder_resources = static_cast<uint8_t>(resp_res_);
  cp.initiator_depth = static_cast<uint8_t>(init_depth_);
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;
  return cp;
}

bool Conn::CreateChannel(SetupError* err) {
  channel_ = L_->rdma_create_event_channel();
  if (!channel_) {
    *err = {errno, "rdma_create_event_channel", CallFailed("rdma_create_event_channel")};
    return false;
  }
  cm_poll_ = WatchReadable(loop_, channel_->fd, this, [](uv_poll_t* h, int, int) {
    if (h->data) static_cast<Conn*>(h->data)->OnCmEvent();
  });
  return true;
}

bool Conn::StartConnect(const sockaddr_storage& dst, int iwarp_port, int timeout_ms, SetupError* err) {
  dst_ = dst;
  iwarp_port_ = iwarp_port;
  timeout_ms_ = timeout_ms;
  connect_start_ns_ = NowNs();
  if (!channel_ && !CreateChannel(err)) return false;
  rdma_port_space ps = restarted_ ? RDMA_PS_TCP : RDMA_PS_IB;
  if (L_->rdma_create_id(channel_, &id_, this, ps) != 0) {
    *err = {errno, "rdma_create_id", CallFailed("rdma_create_id")};
    return false;
  }
  if (L_->rdma_resolve_addr(id_, nullptr, reinterpret_cast<sockaddr*>(&dst_), timeout_ms) != 0) {
    *err = {errno, "rdma_resolve_addr", CallFailed("rdma_resolve_addr")};
    return false;
  }
  phase_ = Phase::kResolving;
  step_ = "rdma_resolve_addr";
  if (!timer_) {
    timer_ = new uv_timer_t;
    uv_timer_init(loop_, timer_);
    timer_->data = this;
    uv_update_time(loop_);  // the loop time may lag a long synchronous stretch: no early timeout
    uv_timer_start(timer_, [](uv_timer_t* t) {
      if (!t->data) return;
      Conn* c = static_cast<Conn*>(t->data);
      c->Fail(ETIMEDOUT, c->step_, "RDMA CM set-up timed out");
    }, static_cast<uint64_t>(timeout_ms), 0);
  }
  return true;
}

bool Conn::StartAccept(rdma_cm_id* id, const wire::VerbsPrivateData& peer, SetupError* err) {
  id_ = id;
  id_->context = this;
  phase_ = Phase::kAccepting;
  step_ = "rdma_accept";
  if (!CreateChannel(err)) return false;
  if (L_->rdma_migrate_id(id_, channel_) != 0) {
    *err = {errno, "rdma_migrate_id", CallFailed("rdma_migrate_id")};
    return false;
  }
  peer_eager_ = peer.eager_bytes;
  credits_ = peer.credits;
  rndv_threshold_ = opt_.rndv_threshold ? opt_.rndv_threshold : std::max(peer.rndv_threshold, opt_.eager_bytes);
  if (!SetupQp(err)) return false;
  wire::VerbsPrivateData mine = PrivateData();
  rdma_conn_param cp = ConnParam(&mine);
  if (L_->rdma_accept(id_, &cp) != 0) {
    *err = {errno, "rdma_accept", CallFailed("rdma_accept")};
    return false;
  }
  return true;
}

bool Conn::SetupQp(SetupError* err) {
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
    *err = {errno, !pd_ ? "ibv_alloc_pd" : !comp_ ? "ibv_create_comp_channel" : "ibv_create_cq",
            std::string("verbs resources: ") + strerror(errno)};
    return false;
  }
  slot_bytes_ = static_cast<uint32_t>(sizeof(wire::VerbsHeader)) + std::max<uint32_t>(opt_.eager_bytes, sizeof(wire::VerbsRts));
  recv_pool_ = static_cast<uint8_t*>(aligned_alloc(4096, ((size_t)n * slot_bytes_ + 4095) & ~size_t{4095}));
  send_pool_ = static_cast<uint8_t*>(aligned_alloc(4096, ((size_t)n * slot_bytes_ + 4095) & ~size_t{4095}));
  if (!recv_pool_ || !send_pool_) {
    *err = {ENOMEM, "aligned_alloc", "out of memory for the eager buffers"};
    return false;
  }
  recv_mr_ = (L_->ibv_reg_mr)(pd_, recv_pool_, (size_t)n * slot_bytes_, IBV_ACCESS_LOCAL_WRITE);
  send_mr_ = recv_mr_ ? (L_->ibv_reg_mr)(pd_, send_pool_, (size_t)n * slot_bytes_, 0) : nullptr;
  if (!send_mr_) {
    *err = {errno, "ibv_reg_mr", std::string("ibv_reg_mr (eager buffers): ") + strerror(errno)};
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
    *err = {errno, "rdma_create_qp", CallFailed("rdma_create_qp")};
    return false;
  }
  for (uint32_t i = 0; i < n; i++) {
    free_slots_.push_back(n - 1 - i);
    PostRecv(i);
  }
  pending_return_ = 0;  // the initial buffers are announced in the private data
  if (int rc = ibv_req_notify_cq(cq_, 0); rc != 0) {
    *err = {rc, "ibv_req_notify_cq", "ibv_req_notify_cq failed"};
    return false;
  }
  cq_armed_ = true;
  cq_poll_ = WatchReadable(loop_, comp_->fd, this, [](uv_poll_t* h, int, int) {
    if (h->data) static_cast<Conn*>(h->data)->OnCq();
  });
  if (!refed_) uv_unref(reinterpret_cast<uv_handle_t*>(cq_poll_));
  return true;
}

void Conn::OnCmEvent() {
  rdma_cm_event* ev = nullptr;
  bool alive = true;
  alive_ = &alive;
  while (channel_ && L_->rdma_get_cm_event(channel_, &ev) == 0) {
    HandleCm(ev);        // acks
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
  SetupError err;
  switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (phase_ != Phase::kResolving) return;
      if (id_->verbs && id_->verbs->device->transport_type == IBV_TRANSPORT_IWARP && !restarted_) {
        // iWARP: RDMA CM connections are kernel TCP connections, in the TCP port space, where
        // the server's own TCP listener holds the port: the verbs listener is on iwarp_port.
        restarted_ = true;
        L_->rdma_destroy_id(id_);
        id_ = nullptr;
        SetIpPort(&dst_, iwarp_port_);
        if (!StartConnect(dst_, iwarp_port_, timeout_ms_, &err)) Fail(err.err ? err.err : EIO, err.syscall, err.message);
        return;
      }
      step_ = "rdma_resolve_route";
      if (L_->rdma_resolve_route(id_, timeout_ms_) != 0) Fail(errno, step_, CallFailed("rdma_resolve_route"));
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      if (phase_ != Phase::kResolving) return;
      if (!SetupQp(&err)) return Fail(ENOMEM, err.syscall, err.message);
      uint64_t rtt = NowNs() - connect_start_ns_;  // two resolutions: about a round trip or more
      rndv_threshold_ = opt_.rndv_threshold ? opt_.rndv_threshold : ChooseThreshold(rtt / 2, opt_.eager_bytes);
      wire::VerbsPrivateData mine = PrivateData();
      rdma_conn_param cp = ConnParam(&mine);
      phase_ = Phase::kConnecting;
      step_ = "rdma_connect";
      if (L_->rdma_connect(id_, &cp) != 0) Fail(errno, step_, CallFailed("rdma_connect"));
      return;
    }
    case RDMA_CM_EVENT_ESTABLISHED:
      if (phase_ == Phase::kConnecting || phase_ == Phase::kAccepting) Established(pdata, plen);
      return;
    case RDMA_CM_EVENT_ADDR_ERROR:
      return Fail(status ? -status : EHOSTUNREACH, "rdma_resolve_addr", "RDMA address resolution failed (no RDMA device reaches it)");
    case RDMA_CM_EVENT_ROUTE_ERROR:
      return Fail(status ? -status : ENETUNREACH, "rdma_resolve_route", "RDMA route resolution failed");
    case RDMA_CM_EVENT_UNREACHABLE:
      return Fail(EHOSTUNREACH, step_, "RDMA peer unreachable");
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return Fail(ECONNRESET, step_, "RDMA CM connect error");
    case RDMA_CM_EVENT_REJECTED: {
      std::string why = "rejected by the peer (nobody listens with RDMA CM there)";
      wire::VerbsPrivateData p{};
      if (plen >= sizeof p) {
        memcpy(&p, pdata, sizeof p);
        if (p.magic == wire::kVerbsMagic) why = "rejected by the fastsock peer (reason " + std::to_string(p.reject_reason) + ")";
      }
      return Fail(ECONNREFUSED, step_, why);
    }
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      if (phase_ != Phase::kEstablished) return Fail(ECONNRESET, step_, "disconnected during set-up");
      if (DebugOn()) fprintf(stderr, "fastsock %d verbs: %s\n", getpid(), L_->rdma_event_str(type));
      if (!closed_) ProcessCq();  // bytes that arrived before the disconnect come first
      peer_gone_ = true;
      Deliver(true);
      Settle();
      return;
    default:
      return;
  }
}

void Conn::Established(const void* pdata, uint8_t plen) {
  if (phase_ == Phase::kConnecting) {
    wire::VerbsPrivateData p{};
    if (plen < sizeof p) return Fail(EPROTO, step_, "the RDMA peer sent no fastsock private data");
    memcpy(&p, pdata, sizeof p);
    if (p.magic != wire::kVerbsMagic || p.version != wire::kVerbsVersion)
      return Fail(EPROTO, step_, "the RDMA peer speaks another protocol or version");
    if (p.eager_bytes < sizeof(wire::VerbsRts) || p.credits < kMinCredits)
      return Fail(EPROTO, step_, "the RDMA peer's buffers are too small");
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
  if (cb) cb(nullptr);
}

void Conn::Fail(int err, const char* syscall, const std::string& msg) {
  if (phase_ == Phase::kEstablished || phase_ == Phase::kDead) return;
  auto cb = std::move(on_setup);
  on_setup = nullptr;
  Destroy();
  phase_ = Phase::kDead;
  SetupError e{err ? err : EIO, syscall, msg};
  if (cb) cb(&e);  // may delete `this`
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
  if (engine_) {
    engine_->Disarm(this);
    engine_.reset();
  }
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

Stats Conn::GetStats() const {
  Stats s;
  s.eager_bytes = opt_.eager_bytes;
  s.peer_eager_bytes = peer_eager_;
  s.recv_buffers = opt_.credits;
  s.credits = credits_;
  s.rndv_threshold = rndv_threshold_;
  s.eager_sent = eager_sent_;
  s.rndv_sent = rndv_sent_;
  s.rndv_received = rndv_received_;
  s.rndv_direct = rndv_direct_;
  s.rndv_declined = rndv_declined_;
  s.credit_messages = credit_msgs_;
  s.starved = starved_;
  if (cache_) {
    s.reg_cache_hits = cache_->hits_;
    s.reg_cache_misses = cache_->misses_;
    s.reg_cache_evictions = cache_->evictions_;
    s.reg_cache_bytes = cache_->bytes_;
    s.reg_cache_entries = cache_->entries();
  }
  s.reg_cache_capacity = opt_.reg_cache_bytes;
  if (id_ && id_->verbs) {
    s.device = L_->ibv_get_device_name(id_->verbs->device);
    s.iwarp = id_->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
  }
  return s;
}

bool Conn::GetInfo(ConnInfo* info) const {
  if (!id_) return false;
  memcpy(&info->local, &id_->route.addr.src_storage, sizeof info->local);
  memcpy(&info->remote, &id_->route.addr.dst_storage, sizeof info->remote);
  info->device = id_->verbs ? L_->ibv_get_device_name(id_->verbs->device) : "";
  return true;
}

}  // namespace verbs
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
