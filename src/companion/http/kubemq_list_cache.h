// SPDX-License-Identifier: BSD-3-Clause
// The KubeMQ list without query parameters, encoded once per state of the registry: while no
// connection changes, every request for the whole list gets a copy of the same bytes instead of
// a new query and encoding (docs/benchmarks.md, "Memory and the full list").
//
// The key is the registry's shared snapshot itself (ConnectionSource::SharedSnapshot): the
// registry builds a new one after every change of its view (an open, a close, a subscription,
// a bridge role, a closed connection's minute), so a changed registry never matches an answer
// of its old state. The cache holds that snapshot only weakly: it keeps no old connection alive
// once the registry has moved on. The answer is encoded from exactly the snapshot it is kept
// under. Answers larger than kMaxCachedBytes are not kept (their memory would stay with the
// companion for good); a request with any query parameter is passed to the view unchanged.
//
// The answer does not depend on who asks: the router checks the Host and the token before the
// view runs, for cached answers as for others.
//
// The kept body is shared with the answers (HttpResponse::shared_body), which are sent from it
// without a copy; a body being sent outlives a change of the cache.
//
// Threads: Answer from any thread, several at once (one mutex, held to compare and to share
// the kept answer; the encoding runs outside it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "companion/connection.h"
#include "companion/http/http_message.h"
#include "companion/http/kubemq_view.h"

namespace mqc {

class KubeMqListCache {
 public:
  // 100 connections of two subscriptions are about 35 KiB; 1,000 about 350 KiB.
  static constexpr std::size_t kMaxCachedBytes = 1 << 20;

  // The view's answer to `params` over `source`, from the cache when `params` is empty and the
  // source's snapshot is the one the kept answer was encoded from.
  HttpResponse Answer(const KubeMqView& view, const ConnectionSource& source,
                      const QueryParams& params) const;

  // Answers served from the cache, and answers encoded for it (for tests and benchmarks).
  std::uint64_t hits() const;
  std::uint64_t misses() const;

 private:
  mutable std::mutex mutex_;
  mutable std::weak_ptr<const std::vector<ConnectionPtr>> snapshot_;
  // The answer's body, shared with the answers being sent; the other parts are a 200 with JSON.
  mutable std::shared_ptr<const std::string> body_;
  mutable std::uint64_t hits_ = 0;
  mutable std::uint64_t misses_ = 0;
};

}  // namespace mqc
