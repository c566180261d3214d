// "ADDR:PORT" (IPv4, or [IPv6]:PORT) to a TCP endpoint, for --listen and, later, the lab file's agents.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <string_view>

namespace fabemu::lab {

// Throws LabError(ERROR_UNSPECIFIED) naming the text when it is not an address and a port 0..65535.
boost::asio::ip::tcp::endpoint parse_endpoint(std::string_view text);

std::string to_string(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace fabemu::lab
