#include "host/lab/address.h"

#include <fmt/core.h>

#include <charconv>

#include "host/lab/error.h"

namespace fabemu::lab {

boost::asio::ip::tcp::endpoint parse_endpoint(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return LabError(proto::ERROR_UNSPECIFIED, fmt::format("'{}' is not ADDR:PORT: {}", text, why));
  };
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) throw bad("no ':PORT'");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) throw bad("bad port");
  boost::system::error_code address_ec;
  const auto address = boost::asio::ip::make_address(std::string(host), address_ec);
  if (address_ec) throw bad("bad address (a numeric IPv4 or [IPv6] address is expected)");
  return {address, static_cast<unsigned short>(port)};
}

std::string to_string(const boost::asio::ip::tcp::endpoint& endpoint) {
  if (endpoint.address().is_v6()) return fmt::format("[{}]:{}", endpoint.address().to_string(), endpoint.port());
  return fmt::format("{}:{}", endpoint.address().to_string(), endpoint.port());
}

}  // namespace fabemu::lab
