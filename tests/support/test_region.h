// SPDX-License-Identifier: BSD-3-Clause
// A shared region as the tests make one. Where the system refuses it, the test fails with the
// reason and the region is null.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "link/shared_region.h"

namespace mqc {

inline std::unique_ptr<SharedRegion> TestRegion(const SharedRegionSizes& sizes) {
  auto created = SharedRegion::Create(sizes);
  if (!created.ok()) {
    ADD_FAILURE() << "no shared region: " << created.status().message();
    return nullptr;
  }
  return std::move(created).value();
}

}  // namespace mqc
