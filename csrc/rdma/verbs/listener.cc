#include "rdma/verbs/listener.h"

#if FASTSOCK_HAVE_RDMA
#include <errno.h>
#include <string.h>

#include "ip_addr.h"
#include "uv_handles.h"
#include "wire/verbs.h"

namespace fastsock {
namespace verbs {

bool Listener::Open(const sockaddr_storage& addr, int port, int iwarp_port, int backlog, SetupError* err) {
  sockaddr_storage ss = addr;
  SetIpPort(&ss, port);
  int unused_port = 0;
  const std::string name = IpName(reinterpret_cast<const sockaddr*>(&addr), &unused_port);
  // `call` failed with `e`; `what` says what, when not the call's name.
  auto fail = [&](int e, const char* call, const char* what = nullptr) {
    *err = {e, call, std::string(what ? what : call) + " " + name + ": " + strerror(e)};
    Close();
    return false;
  };
  channel_ = L_->rdma_create_event_channel();
  if (!channel_) return fail(errno, "rdma_create_event_channel");
  if (L_->rdma_create_id(channel_, &id_, this, RDMA_PS_IB) != 0) return fail(errno, "rdma_create_id");
  if (L_->rdma_bind_addr(id_, reinterpret_cast<sockaddr*>(&ss)) != 0) return fail(errno, "rdma_bind_addr");
  if (!id_->verbs) return fail(ENODEV, "rdma_bind_addr", "no RDMA device has address");
  iwarp_ = id_->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
  device_ = L_->ibv_get_device_name(id_->verbs->device);
  port_ = port;
  if (iwarp_) {
    L_->rdma_destroy_id(id_);
    id_ = nullptr;
    SetIpPort(&ss, iwarp_port);
    port_ = iwarp_port;
    if (L_->rdma_create_id(channel_, &id_, this, RDMA_PS_TCP) != 0) return fail(errno, "rdma_create_id");
    if (L_->rdma_bind_addr(id_, reinterpret_cast<sockaddr*>(&ss)) != 0) return fail(errno, "rdma_bind_addr");
  }
  if (L_->rdma_listen(id_, backlog) != 0) return fail(errno, "rdma_listen");
  poll_ = WatchReadable(loop_, channel_->fd, this, [](uv_poll_t* h, int, int) {
    if (h->data) static_cast<Listener*>(h->data)->OnEvent();
  });
  uv_unref(reinterpret_cast<uv_handle_t*>(poll_));  // the TCP listener keeps the loop alive
  return true;
}

void Listener::Close() {
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

void Listener::OnEvent() {
  rdma_cm_event* ev = nullptr;
  while (channel_ && L_->rdma_get_cm_event(channel_, &ev) == 0) {
    if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
      L_->rdma_ack_cm_event(ev);
      continue;
    }
    rdma_cm_id* cid = ev->id;
    wire::VerbsPrivateData p{};
    bool ok = ev->param.conn.private_data_len >= sizeof p && ev->param.conn.private_data;
    if (ok) memcpy(&p, ev->param.conn.private_data, sizeof p);
    ok = ok && p.magic == wire::kVerbsMagic && p.version == wire::kVerbsVersion && p.eager_bytes >= sizeof(wire::VerbsRts) &&
         p.credits >= kMinCredits;
    L_->rdma_ack_cm_event(ev);
    if (!ok) {
      wire::VerbsPrivateData rej{wire::kVerbsMagic, wire::kVerbsVersion, wire::kVerbsRejectVersion, 0, 0, 0, 0};
      L_->rdma_reject(cid, &rej, sizeof rej);
      L_->rdma_destroy_id(cid);
      continue;
    }
    auto* c = new Conn(loop_, opt_);
    SetupError err;
    if (!c->StartAccept(cid, p, &err)) {
      wire::VerbsPrivateData rej{wire::kVerbsMagic, wire::kVerbsVersion, wire::kVerbsRejectResources, 0, 0, 0, 0};
      L_->rdma_reject(cid, &rej, sizeof rej);
      delete c;  // destroys cid
      continue;
    }
    pending_.insert(c);
    c->on_setup = [this, c](const SetupError* failure) {
      pending_.erase(c);
      if (failure) {
        delete c;
        return;
      }
      if (on_connection) on_connection(c);
      else delete c;
    };
  }
}

}  // namespace verbs
}  // namespace fastsock

#endif  // FASTSOCK_HAVE_RDMA
