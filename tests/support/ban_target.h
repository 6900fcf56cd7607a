// SPDX-License-Identifier: BSD-3-Clause
// A ban on `as`/`who` (ParseBanTarget's words: clientid, username, peerhost, peerhost_net),
// ending at `until_ns` (0: no end). A target the parser refuses fails the calling test.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "link/ban_list.h"

namespace mqc {

inline Ban Target(const std::string& as, const std::string& who, std::int64_t until_ns = 0) {
  Ban ban;
  const Status status = ParseBanTarget(as, who, &ban);
  EXPECT_TRUE(status.ok()) << status.message();
  ban.until_ns = until_ns;
  return ban;
}

}  // namespace mqc
