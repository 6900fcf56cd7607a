// SPDX-License-Identifier: BSD-3-Clause
// KubeMqListCache: the whole KubeMQ list of an unchanged registry served again, never an answer
// of another state, of another query, or to a caller the router refuses.
#include "companion/http/kubemq_list_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../../support/connection_builder.h"
#include "companion/companion_link.h"
#include "companion/connection_registry.h"
#include "companion/http/access_tokens.h"
#include "companion/http/http_router.h"
#include "companion/http/kubemq_view.h"
#include "link/event_records.h"

namespace mqc {
namespace {

constexpr std::int64_t kNow = 1781260200'000'000'000;

class KubeMqListCacheTest : public ::testing::Test {
 protected:
  KubeMqListCacheTest() {
    Open(1, "alpha");
    Open(2, "beta");
  }

  template <typename Event>
  void Apply(EventType type, const Event& event) {
    std::string bytes;
    Encode(event, &bytes);
    ASSERT_TRUE(ApplyEventRecord(&registry_, type, bytes, kNow));
  }
  void Open(std::uint64_t seq, const std::string& id) {
    ConnectionEvent event = TestConnectionRecord(seq, id);
    event.open_time_ns = kNow + static_cast<std::int64_t>(seq);
    Apply(EventType::kConnection, event);
  }

  // What the view answers now, without a cache.
  std::string Fresh(const QueryParams& params = {}) const {
    return KubeMqView().ListConnections(registry_, params).body;
  }
  HttpResponse Cached(const QueryParams& params = {}) const {
    return cache_.Answer(KubeMqView(), registry_, params);
  }

  ConnectionRegistry registry_{ConnectionRegistryOptions()};
  KubeMqListCache cache_;
};

TEST_F(KubeMqListCacheTest, AnUnchangedRegistryIsAnsweredFromTheCacheWithTheSameBytes) {
  const HttpResponse first = Cached();
  const HttpResponse second = Cached();
  EXPECT_EQ(cache_.misses(), 1u);
  EXPECT_EQ(cache_.hits(), 1u);
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.content_type, "application/json");
  EXPECT_EQ(second.Body(), first.Body());
  EXPECT_EQ(second.Body(), Fresh());
  EXPECT_NE(second.Body().find("\"beta\""), std::string::npos);
  // Both answers are the kept bytes themselves: nothing is copied per request.
  ASSERT_NE(first.shared_body, nullptr);
  EXPECT_EQ(second.shared_body, first.shared_body);
  EXPECT_TRUE(second.body.empty());
}

TEST_F(KubeMqListCacheTest, AnAnswerBeingSentKeepsItsBytesAfterTheCacheMovesOn) {
  const HttpResponse sending = Cached();
  const std::string before(sending.Body());
  Open(3, "gamma");
  const HttpResponse newer = Cached();
  EXPECT_NE(newer.Body().find("\"gamma\""), std::string::npos);
  EXPECT_EQ(sending.Body(), before);  // still whole, though no longer kept
  EXPECT_EQ(sending.Body().find("\"gamma\""), std::string::npos);
}

TEST_F(KubeMqListCacheTest, EveryKindOfChangeIsAnsweredAnew) {
  const auto changed = [this](const char* what) {
    const std::uint64_t hits = cache_.hits();
    const HttpResponse answer = Cached();
    EXPECT_EQ(cache_.hits(), hits) << what;
    EXPECT_EQ(answer.Body(), Fresh()) << what;
    EXPECT_EQ(Cached().Body(), answer.Body()) << what;  // and kept for the next one
    EXPECT_EQ(cache_.hits(), hits + 1) << what;
  };
  (void)Cached();
  Open(3, "gamma");
  changed("an open");
  EXPECT_NE(Cached().Body().find("\"gamma\""), std::string::npos);
  Apply(EventType::kSubscribe, SubscriptionEvent{1, 1, "events/a"});
  changed("a subscription");
  EXPECT_NE(Cached().Body().find("events/a"), std::string::npos);
  Apply(EventType::kSubscribe, SubscriptionEvent{1, 0, "events/a"});
  changed("a QoS changed");
  Apply(EventType::kUnsubscribe, SubscriptionEvent{1, 0, "events/a"});
  changed("an unsubscription");
  Apply(EventType::kClose, CloseEvent{2, kNow + 10, CloseReason::kClientDisconnect, {}});
  changed("a close");
  EXPECT_EQ(Cached().Body().find("\"beta\""), std::string::npos);
}

TEST_F(KubeMqListCacheTest, AQueryIsNeverAnsweredFromTheCacheNorKeptInIt) {
  const std::string whole(Cached().Body());
  for (const QueryParams& params :
       {QueryParams{{"client_id", "alpha"}}, QueryParams{{"limit", "1"}},
        QueryParams{{"offset", "1"}}, QueryParams{{"client_id", "nobody"}}}) {
    const HttpResponse answer = Cached(params);
    EXPECT_EQ(answer.Body(), Fresh(params)) << params[0].first;
    EXPECT_NE(answer.Body(), whole) << params[0].first;
  }
  EXPECT_EQ(cache_.hits(), 0u);
  EXPECT_EQ(Cached().Body(), whole);  // the whole list's answer is still the one kept
  EXPECT_EQ(cache_.hits(), 1u);
  // A refused query is the view's 400, not a kept answer.
  const HttpResponse refused = Cached({{"bogus", "1"}});
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(cache_.hits(), 1u);
}

TEST_F(KubeMqListCacheTest, ASourceWithoutASharedSnapshotIsNeverServedFromTheCache) {
  // The default SharedSnapshot makes a new list at every call: no answer can match it.
  class CopySource : public ConnectionSource {
   public:
    std::vector<Connection> Snapshot() const override { return connections; }
    std::vector<Connection> connections;
  } source;
  Connection open = TestConnection(1);
  open.state = ConnectionState::kOpen;
  open.client_id = "one";
  source.connections = {open};
  (void)cache_.Answer(KubeMqView(), source, {});
  source.connections[0].client_id = "other";
  const HttpResponse answer = cache_.Answer(KubeMqView(), source, {});
  EXPECT_NE(answer.Body().find("\"other\""), std::string::npos);
  EXPECT_EQ(cache_.hits(), 0u);
}

HttpRequest ListRequest(const char* authorization) {
  HttpRequest request;
  request.method = "GET";
  request.path = "/api/mqtt/connections";
  if (authorization != nullptr) request.headers = {{"Authorization", authorization}};
  return request;
}

TEST_F(KubeMqListCacheTest, TheRouterChecksTheTokenBeforeAKeptAnswer) {
  AccessTokens tokens(true);
  TokenSet set;
  set.entries.push_back({"read-token-0123456789", AccessLevel::kRead, "token file line 1"});
  tokens.Replace(std::move(set));
  HttpRouter router(registry_, nullptr, nullptr);
  router.SetAccess(&tokens, false);
  const HttpResponse allowed = router.Handle(ListRequest("Bearer read-token-0123456789"));
  ASSERT_EQ(allowed.status, 200);
  EXPECT_EQ(router.Handle(ListRequest("Bearer read-token-0123456789")).Body(), allowed.Body());
  EXPECT_EQ(router.kubemq_cache().hits(), 1u);
  for (const char* refused : {static_cast<const char*>(nullptr), "Bearer wrong-token-0123456789",
                              "Basic cmVhZDp0b2tlbg=="}) {
    const HttpResponse answer = router.Handle(ListRequest(refused));
    EXPECT_EQ(answer.status, 401) << (refused ? refused : "no header");
    EXPECT_EQ(answer.Body().find("alpha"), std::string::npos);
  }
  EXPECT_EQ(router.kubemq_cache().hits(), 1u);
}

TEST_F(KubeMqListCacheTest, ABigAnswerIsNotKept) {
  // Enough connections with long client ids for an answer above the limit.
  const std::string padding(4000, 'x');
  for (std::uint64_t seq = 10; seq < 10 + 300; ++seq) Open(seq, padding + std::to_string(seq));
  const HttpResponse first = Cached();
  ASSERT_GT(first.Body().size(), KubeMqListCache::kMaxCachedBytes);
  EXPECT_EQ(Cached().Body(), first.Body());
  EXPECT_EQ(cache_.hits(), 0u);
  EXPECT_EQ(cache_.misses(), 2u);
}

}  // namespace
}  // namespace mqc
