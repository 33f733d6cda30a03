// shm::Conn's set-up, teardown and close, the side channel, state and counters, and ring memory
// (the idle trim). The data path is in datapath.cc, the waits in polling.cc and sync.cc.
#include "shm/conn.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "uv_handles.h"

namespace fastsock {
namespace shm {

std::unique_ptr<Conn> Conn::Open(uv_loop_t* loop, std::shared_ptr<ProgressEngine> engine, const Setup& s,
                                 Owner* owner, std::string* err) {
  std::string why;
  std::shared_ptr<Segment> seg = Segment::Attach(s.memfd, s.c2s_bytes, s.s2c_bytes, &why);
  if (!seg) {  // Attach keeps the memfd when it refuses it
    for (int fd : {s.memfd, s.peer_doorbell, s.peer_ready, s.side})
      if (fd >= 0) close(fd);
    *err = "shared-memory segment refused: " + why;
    return nullptr;
  }
  // Attach closed the memfd (the mappings keep the memory); Adopt keeps or closes the doorbell
  // and the ready list.
  std::shared_ptr<PeerDoorbell> peer =
      PeerDoorbell::Adopt(s.peer_doorbell, s.peer_ready, s.peer_ready_nodes, s.peer_doorbell_id, &why);
  if (!peer) {
    if (s.side >= 0) close(s.side);
    *err = "the peer loop's ready list refused: " + why;
    return nullptr;
  }
  std::unique_ptr<Conn> c(new Conn(std::move(engine), owner));
  c->seg_ = std::move(seg);
  c->peer_ = std::move(peer);
  c->side_fd_ = s.side;
  c->tx_ = c->seg_->Tx(s.client);
  c->rx_ = c->seg_->Rx(s.client);
  c->own_hint_ = c->seg_->Hint(s.client);
  c->peer_hint_ = c->seg_->Hint(!s.client);
  c->tx_start_ = c->tx_.control()->head.load(std::memory_order_acquire);
  c->rx_start_ = c->rx_.control()->tail.load(std::memory_order_acquire);
  // Before any waiting flag is raised (ArmConsumerWait/ArmProducerWait store them with release):
  // the peer that clears one reads this to push onto this loop's ready list.
  c->own_hint_->ready_token.store(c->engine_->AdoptToken(c.get()), std::memory_order_release);
  c->side_poll_ = new uv_poll_t;
  uv_poll_init(loop, c->side_poll_, c->side_fd_);
  c->side_poll_->data = c.get();
  uv_poll_start(c->side_poll_, UV_READABLE | UV_DISCONNECT, OnSide);
  return c;
}

Conn::~Conn() {
  local_ = nullptr;  // the owner's word may be gone already
  Teardown();
}

void Conn::Teardown() {
  if (!closed_ && seg_) final_ = Counters();
  if (engine_) {
    engine_->UnwatchIdle(this);
    engine_->Disarm(this);
    engine_->DropToken(this);
    engine_.reset();
  }
  if (side_poll_) {
    side_poll_->data = nullptr;
    ClosePoll(side_poll_);
    side_poll_ = nullptr;
  }
  // uv_poll_stop removed the fd from epoll; closing it now is safe.
  if (side_fd_ >= 0) close(side_fd_);
  side_fd_ = -1;
  peer_.reset();
  // JS views (controlView, txRegion) may still hold the segment: their memory becomes private
  // zero pages now, so a closed connection's shared memory goes at once, not at a collection.
  if (seg_ && seg_.use_count() > 1) seg_->Release();
  seg_.reset();
  closed_ = true;
  PublishLocal(kStateClosed);
}

// The peer's token is read on every wake-up (not kept): it is written once, when the peer's
// endpoint is made, which for the server is before the client's exists.
void Conn::RingPeer() {
  if (peer_) peer_->Wake(peer_hint_->ready_token.load(std::memory_order_acquire));
}

bool Conn::CheckSide() {
  if (peer_gone_) return true;
  char b;
  ssize_t r = recv(side_fd_, &b, 1, MSG_DONTWAIT | MSG_PEEK);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) peer_gone_ = true;
  // r == 1: the peer sent something on the side channel, which it must not: treat as gone.
  if (r == 1) peer_gone_ = true;
  if (peer_gone_) PublishLocal(kStateGone);
  return peer_gone_;
}

void Conn::Notify() {
  if (closed_) return;
  if (engine_) {
    engine_->Release(this);  // the wait's event is the owner's now
    PublishCpu();            // also without polling: the peer may poll, and must know
  }
  owner_->OnEvent();  // last: it may close this end
}

void Conn::OnSide(uv_poll_t* h, int status, int) {
  auto* self = static_cast<Conn*>(h->data);
  if (!self || self->closed_) return;
  if (status < 0 || self->CheckSide()) {
    self->peer_gone_ = true;
    self->PublishLocal(kStateGone);
    uv_poll_stop(h);
  }
  self->Notify();
}

void Conn::MirrorState(uint32_t* word) {
  local_ = word;
  if (local_ && peer_gone_) local_[0] |= kStateGone;
}

// The peer sent EOF, the peer reset, the peer is gone (side channel closed), this end is closed,
// unread bytes in the receive ring. One call, no syscall: what the pump needs to decide between
// "more work", "end of stream" and "sleep".
uint32_t Conn::State() const {
  if (closed_) return kStateClosed;
  uint32_t s = 0;
  uint32_t f = rx_.ProducerFlags();
  if (f & wire::kRingEof) s |= kStateEof;
  if (f & wire::kRingReset) s |= kStateReset;
  if (peer_gone_) s |= kStateGone;  // set by the side channel's watcher
  if (rx_.Readable() > 0) s |= kStateReadable;
  return s;
}

void Conn::Shutdown() {
  if (closed_) return;
  tx_.SetProducerFlag(wire::kRingEof);
  tx_.control()->consumer_waiting.store(0, std::memory_order_relaxed);
  RingPeer();
}

// Publishes the end of this side, as the kernel does when a TCP socket is closed: a RST when
// asked (`reset`) or when bytes were left unread in the receive ring, else a FIN (EOF; the peer
// still reads what is in the ring). Then rings the peer and tears down.
void Conn::Close(bool reset) {
  if (closed_) return;
  tx_.SetProducerFlag(reset || rx_.Readable() > 0 ? wire::kRingReset : wire::kRingEof);
  RingPeer();
  if (side_fd_ >= 0) shutdown(side_fd_, SHUT_RDWR);
  Teardown();
}

void Conn::SetRefed(bool on) {
  // The loop's doorbell is never ref'd: the side channel's watcher holds the loop for the
  // connection, as a TCP socket's handle does.
  if (!side_poll_) return;
  if (on) uv_ref(reinterpret_cast<uv_handle_t*>(side_poll_));
  else uv_unref(reinterpret_cast<uv_handle_t*>(side_poll_));
}

StreamCounters Conn::Counters() const {
  if (closed_) return final_;
  return {tx_.control()->head.load(std::memory_order_relaxed) - tx_start_,
          rx_.control()->tail.load(std::memory_order_relaxed) - rx_start_};
}

Mapping Conn::GetMapping() const {
  Mapping m;
  if (closed_) return m;
  m.header = seg_->header();
  m.rx_control = static_cast<uint64_t>(reinterpret_cast<uint8_t*>(rx_.control()) - m.header);
  m.tx_control = static_cast<uint64_t>(reinterpret_cast<uint8_t*>(tx_.control()) - m.header);
  m.tx_ring = tx_.data();
  m.tx_ring_size = tx_.size();
  m.segment = seg_;
  return m;
}

namespace {
uint64_t PageBytes() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Bytes of [p, p + n) whose pages are in the memfd's page cache (mincore; shmem: allocated).
int64_t ResidentBytes(const uint8_t* p, uint64_t n) {
  const uint64_t page = PageBytes();
  std::vector<unsigned char> v((n + page - 1) / page);
  if (mincore(const_cast<uint8_t*>(p), n, v.data()) != 0) return -1;
  uint64_t pages = 0;
  for (unsigned char c : v) pages += c & 1;
  return static_cast<int64_t>(pages * page);
}
}  // namespace

bool Conn::OnIdleTick() {
  if (closed_) return true;
  uint64_t head = tx_.control()->head.load(std::memory_order_relaxed);
  if (head != idle_seen_head_) {  // written since the last tick: not idle yet
    idle_seen_head_ = head;
    return false;
  }
  if (loaned_) return false;
  int64_t r = tx_.TrimFree(PageBytes(), &trimmed_to_);
  if (r < 0) return true;  // madvise refused (or a peer scribbled on tail): keep the pages
  if (r > 0) {
    trims_++;
    trimmed_bytes_ += static_cast<uint64_t>(r);
  }
  // Bytes still unread keep their pages: look again when the consumer has taken them (unless
  // it is gone: they stay until close).
  return peer_gone_ || tx_.Writable() == tx_.size();
}

MemStats Conn::GetMemStats() const {
  MemStats m;
  if (!closed_) {
    m.ring_bytes = tx_.size();
    m.tx_resident_bytes = ResidentBytes(tx_.data(), tx_.size());
    m.rx_resident_bytes = ResidentBytes(rx_.data(), rx_.size());
  }
  m.trims = trims_;
  m.trimmed_bytes = trimmed_bytes_;
  return m;
}

}  // namespace shm
}  // namespace fastsock
