#include "report/json_string.hpp"

#include <nlohmann/json.hpp>

namespace trainsim::report {

std::string json_string(std::string_view s) {
  // nlohmann's serializer escapes what JSON requires; `replace` stands in
  // for invalid UTF-8 rather than throwing.
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace trainsim::report
