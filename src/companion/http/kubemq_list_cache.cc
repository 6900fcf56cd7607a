// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/kubemq_list_cache.h"

#include <string_view>
#include <utility>

#include "companion/http/view_util.h"

namespace mqc {
namespace {

// A source that is one snapshot: the answer encoded from it is the answer of that snapshot.
class SnapshotSource : public ConnectionSource {
 public:
  explicit SnapshotSource(ConnectionList snapshot) : snapshot_(std::move(snapshot)) {}
  std::vector<Connection> Snapshot() const override {
    std::vector<Connection> copies;
    copies.reserve(snapshot_->size());
    for (const ConnectionPtr& connection : *snapshot_) copies.push_back(*connection);
    return copies;
  }
  ConnectionList SharedSnapshot() const override { return snapshot_; }

 private:
  ConnectionList snapshot_;
};

// Whether `weak` still points at `shared` (an expired one matches nothing: a new snapshot at
// the old one's address is another snapshot).
bool Same(const std::weak_ptr<const std::vector<ConnectionPtr>>& weak,
          const ConnectionList& shared) {
  return shared != nullptr && weak.lock() == shared;
}

}  // namespace

HttpResponse KubeMqListCache::Answer(const KubeMqView& view, const ConnectionSource& source,
                                     const QueryParams& params) const {
  if (!params.empty()) return view.ListConnections(source, params);
  const ConnectionList snapshot = source.SharedSnapshot();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Same(snapshot_, snapshot)) {
      ++hits_;
      HttpResponse response;
      response.status = kHttpOk;
      response.content_type = kJsonContentType;
      response.shared_body = body_;
      return response;
    }
  }
  HttpResponse response = view.ListConnections(SnapshotSource(snapshot), params);
  const bool keep = response.status == kHttpOk && response.headers.empty() &&
                    response.content_type == kJsonContentType && response.shared_body == nullptr &&
                    response.body.size() <= kMaxCachedBytes;
  // Kept and sent as the same bytes: the answer moves into the shared body.
  if (keep) response.shared_body = std::make_shared<const std::string>(std::move(response.body));
  std::lock_guard<std::mutex> lock(mutex_);
  ++misses_;
  if (keep) {
    snapshot_ = snapshot;
    body_ = response.shared_body;
  } else {
    snapshot_.reset();
    body_.reset();
  }
  return response;
}

std::uint64_t KubeMqListCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

std::uint64_t KubeMqListCache::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}

}  // namespace mqc
