#include "host/lab/udp_transport.h"

#include <fmt/core.h>

#include <netinet/in.h>

#include <boost/asio/socket_base.hpp>
#include <boost/system/system_error.hpp>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace fabemu::lab {

using boost::asio::ip::udp;

namespace {

// Receive calls per socket per round, at most: enough to drain what every sender may have sent it in a
// round (a socket left with a backlog delays the ACKs, and the senders time out spuriously).
constexpr int kRxCalls = 64;
// A received datagram's control data: one cmsg of an int at most (IPV6_TCLASS; IP_TOS is one byte).
constexpr size_t kControlBytes = CMSG_SPACE(sizeof(int));

void set_int(int fd, int level, int opt, int v, const char* what) {
  if (setsockopt(fd, level, opt, &v, sizeof v) != 0) {
    throw boost::system::system_error(errno, boost::system::system_category(), what);
  }
}

void set_buffer(int fd, int force_opt, int opt, int bytes) {
  // SO_*BUFFORCE passes rmem_max/wmem_max with CAP_NET_ADMIN; otherwise the plain option, capped.
  if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof bytes) != 0) {
    (void)setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
  }
}

int get_buffer(int fd, int opt) {
  int v = 0;
  socklen_t len = sizeof v;
  return getsockopt(fd, SOL_SOCKET, opt, &v, &len) == 0 ? v : 0;
}

}  // namespace

UdpTransport::UdpTransport(std::vector<udp::endpoint> endpoints, const std::vector<bool>& local, uint32_t batch,
                           int socket_buffer_bytes, uint32_t max_datagram, uint8_t dscp, host::dpdk::Ecn ecn)
    : endpoints_(std::move(endpoints)),
      batch_(batch),
      rx_slot_bytes_(size_t{max_datagram} + 64),
      tos_(host::dpdk::tos_byte(dscp, ecn)) {
  if (local.size() != endpoints_.size()) {
    throw std::invalid_argument(
        fmt::format("UDP transport: {} local flags for {} endpoints", local.size(), endpoints_.size()));
  }
  if (batch_ == 0) throw std::invalid_argument("UDP transport: batch 0");
  host::dpdk::check_sender_class(dscp, ecn, "UDP transport");
  const auto ranks = static_cast<uint32_t>(endpoints_.size());
  sock_of_.assign(ranks, -1);
  for (uint32_t r = 0; r < ranks; ++r) {
    if (!local[r]) continue;
    auto so = std::make_unique<Sock>(io_);
    so->rank = r;
    so->s.open(endpoints_[r].protocol());
    so->fd = so->s.native_handle();
    set_buffer(so->fd, SO_RCVBUFFORCE, SO_RCVBUF, socket_buffer_bytes);
    set_buffer(so->fd, SO_SNDBUFFORCE, SO_SNDBUF, socket_buffer_bytes);
    // The traffic class every datagram leaves with, and the one each arrives with (a control message per
    // datagram: asked for only when the class is not the default, whose runs pay nothing for it).
    if (tos_ != 0) {
      const bool v4 = endpoints_[r].protocol() == udp::v4();
      set_int(so->fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_TOS : IPV6_TCLASS, tos_, v4 ? "IP_TOS" : "IPV6_TCLASS");
      set_int(so->fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_RECVTOS : IPV6_RECVTCLASS, 1,
              v4 ? "IP_RECVTOS" : "IPV6_RECVTCLASS");
    }
    so->s.bind(endpoints_[r]);  // boost::system::system_error naming the cause
    so->s.non_blocking(true);
    endpoints_[r] = so->s.local_endpoint();
    stats_.rcvbuf_bytes = get_buffer(so->fd, SO_RCVBUF);
    stats_.sndbuf_bytes = get_buffer(so->fd, SO_SNDBUF);
    sock_of_[r] = static_cast<int32_t>(socks_.size());
    socks_.push_back(std::move(so));
  }
  addr_.resize(ranks);
  addr_len_.resize(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    std::memcpy(&addr_[r], endpoints_[r].data(), endpoints_[r].size());
    addr_len_[r] = static_cast<socklen_t>(endpoints_[r].size());
  }
  msgs_.resize(batch_);
  iov_.resize(batch_);
  rx_msgs_.resize(batch_);
  rx_iov_.resize(batch_);
  rx_buf_.resize(size_t{batch_} * rx_slot_bytes_);
  if (tos_ != 0) rx_control_.resize(size_t{batch_} * kControlBytes);  // the class is asked for
}

UdpTransport::~UdpTransport() = default;

std::string UdpTransport::describe() const {
  return "UDP" + host::dpdk::class_suffix(static_cast<uint8_t>(tos_ >> 2), static_cast<host::dpdk::Ecn>(tos_ & 3));
}

void UdpTransport::count_class(const msghdr& h) {
  for (const cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(const_cast<msghdr*>(&h), const_cast<cmsghdr*>(c))) {
    int tos = -1;
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && c->cmsg_len >= CMSG_LEN(1)) {
      tos = *CMSG_DATA(c);
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      std::memcpy(&tos, CMSG_DATA(c), sizeof tos);
    }
    if (tos < 0 || tos > 255) continue;
    ++stats_.frames_by_ecn[tos & 3];
    stats_.frames_dscp_changed += (tos >> 2) != (tos_ >> 2);
    return;
  }
}

std::string UdpTransport::address_of(uint32_t rank) const {
  const udp::endpoint& ep = endpoints_.at(rank);
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

void UdpTransport::set_remote_endpoint(uint32_t rank, const udp::endpoint& ep) {
  if (rank >= endpoints_.size()) {
    throw std::out_of_range(fmt::format("socket fabric: rank {} of {}", rank, endpoints_.size()));
  }
  if (sock_of_[rank] >= 0) throw std::logic_error(fmt::format("socket fabric: rank {} is local", rank));
  endpoints_[rank] = ep;
  std::memcpy(&addr_[rank], ep.data(), ep.size());
  addr_len_[rank] = static_cast<socklen_t>(ep.size());
}

uint32_t UdpTransport::send(uint32_t from, std::span<const TxDatagram> batch) {
  Sock& so = *socks_.at(static_cast<size_t>(sock_of_.at(from)));
  const auto n = static_cast<uint32_t>(std::min<size_t>(batch.size(), batch_));
  uint32_t sent = 0;
  if (batch_ > 1) {
    for (uint32_t i = 0; i < n; ++i) {
      const TxDatagram& d = batch[i];
      iov_[i] = iovec{const_cast<uint8_t*>(d.data), d.len};
      msghdr& h = msgs_[i].msg_hdr;
      h = msghdr{};
      h.msg_name = &addr_[d.to];
      h.msg_namelen = addr_len_[d.to];
      h.msg_iov = &iov_[i];
      h.msg_iovlen = 1;
    }
    const int r = ::sendmmsg(so.fd, msgs_.data(), n, MSG_DONTWAIT);
    if (r >= 0) {
      sent = static_cast<uint32_t>(r);
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS && errno != EINTR) {
      ++stats_.send_errors;  // the first one is lost: the reliability layer sends it again
      sent = 1;
    }
  } else {
    for (; sent < n; ++sent) {
      const TxDatagram& d = batch[sent];
      boost::system::error_code ec;
      so.s.send_to(boost::asio::buffer(d.data, d.len), endpoints_[d.to], 0, ec);
      if (ec == boost::asio::error::would_block || ec == boost::asio::error::no_buffer_space) break;
      if (ec) ++stats_.send_errors;
    }
  }
  return sent;
}

void UdpTransport::receive(DatagramSink& sink) {
  for (auto& so : socks_) receive(*so, sink);
}

void UdpTransport::receive(Sock& so, DatagramSink& sink) {
  for (int call = 0; call < kRxCalls; ++call) {
    uint32_t n = 0;
    if (batch_ > 1) {
      for (uint32_t i = 0; i < batch_; ++i) {
        rx_iov_[i] = iovec{rx_buf_.data() + size_t{i} * rx_slot_bytes_, rx_slot_bytes_};
        msghdr& h = rx_msgs_[i].msg_hdr;
        h = msghdr{};
        h.msg_iov = &rx_iov_[i];
        h.msg_iovlen = 1;
        if (tos_ != 0) {
          h.msg_control = rx_control_.data() + size_t{i} * kControlBytes;
          h.msg_controllen = kControlBytes;
        }
      }
      const int r = ::recvmmsg(so.fd, rx_msgs_.data(), batch_, MSG_DONTWAIT, nullptr);
      if (r <= 0) return;  // EAGAIN: nothing more; errors (ICMP reports) are not ours to act on
      n = static_cast<uint32_t>(r);
      for (uint32_t i = 0; i < n; ++i) {
        if (tos_ != 0) count_class(rx_msgs_[i].msg_hdr);
        sink.datagram(so.rank, {rx_buf_.data() + size_t{i} * rx_slot_bytes_, rx_msgs_[i].msg_len},
                      (rx_msgs_[i].msg_hdr.msg_flags & MSG_TRUNC) != 0);
      }
    } else {
      for (; n < 64; ++n) {
        iovec iov{rx_buf_.data(), rx_slot_bytes_};
        msghdr h{};
        h.msg_iov = &iov;
        h.msg_iovlen = 1;
        if (tos_ != 0) {
          h.msg_control = rx_control_.data();
          h.msg_controllen = kControlBytes;
        }
        const ssize_t len = ::recvmsg(so.fd, &h, MSG_DONTWAIT);
        if (len < 0) return;
        if (tos_ != 0) count_class(h);
        sink.datagram(so.rank, {rx_buf_.data(), static_cast<size_t>(len)}, (h.msg_flags & MSG_TRUNC) != 0);
      }
    }
    if (n < batch_) return;
  }
}

}  // namespace fabemu::lab
