// The socket fabric's measurements of a run (SocketStats: the counters both real-time fabrics keep,
// host/wire/wire_counters.h, and the socket fabric's own) and their text and JSON forms (the report's
// "socket" section). SocketFabric::stats() fills them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/wire/collective_spans.h"
#include "host/wire/wire_counters.h"

namespace fabemu::lab {

// WireStats as the socket fabric counts them: messages and datagrams of the local ranks; latency per message
// with a local source, from its first datagram sent to the ACK that completes it (wall ns, one way plus the
// ACK's way back; the adaptive RTO's sample); jitter after sendmmsg returned.
struct SocketStats : host::dpdk::WireStats {
  std::string transport;              // the datagrams' carrier: "UDP", or "DPDK <device> <MAC>"
  uint64_t messages_sent = 0, bytes_sent = 0;          // local source, remote or local destination
  uint64_t messages_received = 0, bytes_received = 0;  // reassembled for a local destination
  uint64_t model_only_messages = 0;   // neither end local (no wire)
  uint64_t datagrams_tx = 0, datagram_bytes_tx = 0, datagrams_rx = 0, datagram_bytes_rx = 0;
  uint64_t frames_not_ours = 0;       // DPDK transport: frames on the port that carry no datagram for a local rank
  // The datagrams (UDP, when the run's class is not the default) or the frames that carried one (DPDK)
  // for a local rank, by the ECN codepoint they arrived with (index: host::dpdk::Ecn, so [3] is CE: marked
  // on the way), and those whose DSCP was not the run's.
  uint64_t frames_by_ecn[4] = {};
  uint64_t frames_dscp_changed = 0;
  uint64_t send_errors = 0;           // sendto failures other than EAGAIN (retried by the reliability layer)
  uint64_t data_datagrams = 0;        // first transmissions of data packets
  uint64_t feedback_dropped = 0;      // ACK/NACK not queued (socket full): the sender's timeout covers them
  uint64_t not_ours_by_verdict[8] = {};  // by DatagramVerdict (host/lab/datagram.h)
  int rcvbuf_bytes = 0, sndbuf_bytes = 0;         // what the kernel granted (it reports twice the value set)
  uint32_t batch = 0;
  // D > 0: per collective with wire messages to a local destination, measured vs modelled
  // (host/wire/collective_spans.h).
  std::vector<host::dpdk::CollectiveSpans::Span> collectives;
};

std::string format_socket_stats(const SocketStats& stats);
std::string socket_stats_to_json(const SocketStats& stats);  // the report's "socket" section

}  // namespace fabemu::lab
