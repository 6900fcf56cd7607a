// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/http_message.h"

#include <string>
#include <string_view>

#include "link/text_util.h"

namespace mqc {

const std::string* HttpRequest::FindHeader(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreAsciiCase(key, name)) return &value;
  }
  return nullptr;
}

}  // namespace mqc
