#include "host/lab/datagram_transport.h"

#include "host/wire/address_plan.h"

namespace fabemu::lab {

host::dpdk::Endpoint lab_dpdk_endpoint(uint32_t rank, const host::dpdk::MacAddr& host_mac) {
  host::dpdk::Endpoint e = host::dpdk::default_endpoint(rank);
  e.mac = host_mac;
  return e;
}

}  // namespace fabemu::lab
