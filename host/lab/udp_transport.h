// The socket fabric's kernel transport (datagram_transport.h): one Boost.Asio UDP socket per local rank,
// bound at the rank's endpoint, non-blocking, batched with sendmmsg/recvmmsg (or one send_to /
// recvmsg per datagram with batch 1). With a traffic class other than the default, every datagram leaves
// with it (IPv4 TOS / IPv6 traffic class) and the one each datagram arrived with is counted by ECN
// codepoint (TransportStats); the default class is neither set nor counted.
// host/lab/README.md, "Socket fabric".
#pragma once

#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host/lab/datagram_transport.h"

namespace fabemu::lab {

class UdpTransport final : public DatagramTransport {
 public:
  // endpoints[r]: where rank r receives; local[r]: bind a socket there (port 0: the kernel picks one, see
  // endpoints()). `batch`: datagrams per sendmmsg/recvmmsg (1: one call each); `max_datagram`: the
  // receive slot (a longer datagram arrives truncated); `dscp` (0-63) and `ecn` (not CE): every datagram's
  // traffic class (IP_TOS / IPV6_TCLASS). boost::system::system_error when a socket cannot bind or take
  // the traffic class; std::invalid_argument for sizes that do not match, a DSCP above 63 or CE.
  UdpTransport(std::vector<boost::asio::ip::udp::endpoint> endpoints, const std::vector<bool>& local, uint32_t batch,
               int socket_buffer_bytes, uint32_t max_datagram, uint8_t dscp = 0,
               host::dpdk::Ecn ecn = host::dpdk::Ecn::kNotEct);
  ~UdpTransport() override;

  std::string describe() const override;
  std::string address_of(uint32_t rank) const override;
  uint32_t send(uint32_t from, std::span<const TxDatagram> batch) override;
  void receive(DatagramSink& sink) override;
  TransportStats stats() const override { return stats_; }

  const std::vector<boost::asio::ip::udp::endpoint>& endpoints() const noexcept { return endpoints_; }
  void set_remote_endpoint(uint32_t rank, const boost::asio::ip::udp::endpoint& ep);

 private:
  struct Sock {
    explicit Sock(boost::asio::io_context& io) : s(io) {}
    boost::asio::ip::udp::socket s;
    int fd = -1;
    uint32_t rank = 0;
  };
  void receive(Sock& so, DatagramSink& sink);
  // Counts the traffic class `h`'s control data carries (IP_TOS or IPV6_TCLASS), if any.
  void count_class(const msghdr& h);

  boost::asio::io_context io_;  // before the sockets
  std::vector<boost::asio::ip::udp::endpoint> endpoints_;
  uint32_t batch_;
  std::vector<std::unique_ptr<Sock>> socks_;
  std::vector<int32_t> sock_of_;            // rank -> index in socks_, -1 when remote
  std::vector<sockaddr_storage> addr_;      // rank -> its endpoint for sendmmsg
  std::vector<socklen_t> addr_len_;
  std::vector<mmsghdr> msgs_, rx_msgs_;     // batch entries, rebuilt per call (apart: the fabric sends
  std::vector<iovec> iov_, rx_iov_;         // feedback while received datagrams are being processed)
  std::vector<uint8_t> rx_buf_;             // batch receive slots
  std::vector<uint8_t> rx_control_;         // batch control buffers of kControlBytes (the traffic class)
  size_t rx_slot_bytes_;
  uint8_t tos_;                             // tos_byte(dscp, ecn); 0: the class is neither set nor counted
  TransportStats stats_;
};

}  // namespace fabemu::lab
