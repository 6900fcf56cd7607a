// SPDX-License-Identifier: BSD-3-Clause
// The merged fleet stream: this broker's changes and a peer's (a loopback server speaking the
// node stream's framing), each tagged with its node, a resume token that resumes each broker
// from its own point, and a peer whose stream breaks: reported, then resumed after the last
// message read from it.
#include "companion/fleet/fleet_watch.h"

#include <cjson/cJSON.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../../support/fake_live.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/watch_resume_token.h"
#include "companion/json_util.h"
#include "loopback_server.h"

namespace mqc {
namespace {

struct Seen {
  std::string kind;  // without CONNECTION_CHANGE_KIND_
  int node = 0;
  std::string sequence;
  std::string client_id;
  std::string token;
  std::string peer;  // PEER_LOST
};

std::vector<Seen> Parse(std::string* bytes) {
  std::vector<Seen> seen;
  std::uint8_t flags = 0;
  std::string payload;
  while (TakeEnvelope(bytes, 1 << 20, &flags, &payload) == 1) {
    const CjsonPtr json = ParseJson(payload);
    EXPECT_TRUE(json != nullptr);
    if (json == nullptr) break;
    const auto text = [](const cJSON* item) {
      return cJSON_IsString(item) ? std::string(item->valuestring) : std::string();
    };
    Seen s;
    s.kind = text(cJSON_GetObjectItem(json.get(), "kind"));
    if (s.kind.size() > 23) s.kind = s.kind.substr(23);
    const cJSON* node = cJSON_GetObjectItem(json.get(), "nodeId");
    s.node = cJSON_IsNumber(node) ? node->valueint : 0;
    s.sequence = text(cJSON_GetObjectItem(json.get(), "sequence"));
    s.token = text(cJSON_GetObjectItem(json.get(), "resumeToken"));
    const cJSON* connection = cJSON_GetObjectItem(json.get(), "connection");
    if (connection != nullptr) s.client_id = text(cJSON_GetObjectItem(connection, "clientId"));
    const cJSON* error = cJSON_GetObjectItem(json.get(), "peerError");
    if (error != nullptr) s.peer = text(cJSON_GetObjectItem(error, "peer"));
    seen.push_back(s);
  }
  return seen;
}

// A node stream's message in binary, as a peer sends it.
std::string PeerMessage(std::uint64_t sequence, ChangeKind kind, const std::string& client_id) {
  Connection connection;
  connection.node_id = 9;
  connection.client_id = client_id;
  connection.state = ConnectionState::kOpen;
  WatchMessage message;
  message.sequence = sequence;
  message.kind = kind;
  message.connection = client_id.empty() ? nullptr : &connection;
  message.node_id = 9;
  std::string out;
  AppendEnvelope(0, EncodeWatchConnectionsResponseProto(message), &out);
  return out;
}

// The WatchConnectionsRequest a peer was sent.
connections_v1::WatchConnectionsRequest RequestOf(const std::string& raw) {
  connections_v1::WatchConnectionsRequest request;
  const std::size_t body = raw.find("\r\n\r\n");
  EXPECT_NE(body, std::string::npos);
  if (body != std::string::npos && raw.size() >= body + 9) {
    EXPECT_TRUE(request.ParseFromString(raw.substr(body + 9)));
  }
  return request;
}

class FleetWatchTest : public ::testing::Test {
 protected:
  std::shared_ptr<FleetWatchStream> Start(const FleetQueryOptions& fleet,
                                          const std::string& token) {
    WatchStreamOptions options;
    options.node_id = 7;
    options.buffer = 64;
    FleetWatchPositions positions;
    EXPECT_TRUE(FleetWatchPositions::FromToken(token, &positions).ok());
    auto stream = std::make_shared<FleetWatchStream>(live_, &changes_, fleet, options, "",
                                                     std::move(positions), nullptr);
    stream->SetWake([] {});
    return stream;
  }
  void Publish(const std::string& client_id) {
    ConnectionChange change;
    change.kind = ChangeKind::kOpened;
    auto connection = std::make_shared<Connection>();
    connection->client_id = client_id;
    connection->state = ConnectionState::kOpen;
    change.after = connection;
    changes_.Publish(std::move(change));
  }
  // Reads until `done` holds of what was read (bounded: 10 s).
  std::vector<Seen> ReadUntil(FleetWatchStream* stream,
                              const std::function<bool(const std::vector<Seen>&)>& done) {
    std::vector<Seen> seen;
    std::string bytes;
    for (int i = 0; i < 1000 && !done(seen); ++i) {
      if (stream->Read(1 << 16, &bytes) == HttpBodyStream::Pull::kWait) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      for (Seen& s : Parse(&bytes)) seen.push_back(std::move(s));
    }
    return seen;
  }

  ConnectionChanges changes_{{64, 500}};
  FakeLive live_{changes_};
};

TEST_F(FleetWatchTest, ThisBrokerAloneIsTaggedAndResumedFromItsToken) {
  auto stream = Start({}, "");
  std::vector<Seen> seen = ReadUntil(stream.get(), [](const std::vector<Seen>& s) {
    return !s.empty() && s.back().kind == "SYNCED";
  });
  Publish("a");  // 501
  for (Seen& s : ReadUntil(stream.get(), [](const std::vector<Seen>& s) { return !s.empty(); })) {
    seen.push_back(std::move(s));
  }
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].kind, "RESET");
  EXPECT_EQ(seen[1].kind, "SYNCED");
  EXPECT_EQ(seen[2].client_id, "a");
  for (const Seen& s : seen) EXPECT_EQ(s.node, 7);
  FleetWatchPositions positions;
  ASSERT_TRUE(FleetWatchPositions::FromToken(seen[2].token, &positions).ok());
  EXPECT_EQ(positions.ResumeAfter(7), 501u);

  // Resumed from that token: only what came after, no fresh state.
  const std::string token = seen[2].token;
  stream.reset();
  Publish("b");  // 502
  auto resumed = Start({}, token);
  seen = ReadUntil(resumed.get(), [](const std::vector<Seen>& s) { return !s.empty(); });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, "OPENED");
  EXPECT_EQ(seen[0].client_id, "b");
  EXPECT_EQ(seen[0].sequence, "502");
}

TEST_F(FleetWatchTest, APeerIsTaggedLostWhenItsStreamBreaksAndResumedAfterItsLastMessage) {
  // The first call: a fresh state and one change; the second: one change more; each then ends
  // without its end-of-stream message (the peer died). Later calls get no answer at all.
  int calls = 0;  // only the server's thread
  LoopbackServer server([&calls](const std::string&) {
    std::string answer = "HTTP/1.0 200 OK\r\nContent-Type: application/connect+proto\r\n\r\n";
    ++calls;
    if (calls == 1) {
      answer += PeerMessage(80, ChangeKind::kReset, "") + PeerMessage(80, ChangeKind::kSynced, "") +
                PeerMessage(81, ChangeKind::kOpened, "p1");
    } else if (calls == 2) {
      answer += PeerMessage(82, ChangeKind::kOpened, "p2");
    } else {
      answer.clear();
    }
    return answer;
  });
  FleetQueryOptions fleet;
  fleet.peers = {*ParsePeerUrl("http://127.0.0.1:" + std::to_string(server.port()))};
  fleet.client = std::move(PeerClient::Create("", false)).value();
  // The client resumes node 7 (this broker) after 500 and knows nothing of node 9 yet.
  FleetWatchPositions start;
  start.Sent(7, ChangeKind::kSynced, 500);
  auto stream = Start(fleet, start.Token());
  std::vector<Seen> seen = ReadUntil(stream.get(), [](const std::vector<Seen>& seen_so_far) {
    for (const Seen& s : seen_so_far) {
      if (s.client_id == "p2") return true;
    }
    return false;
  });
  std::vector<std::string> got;
  for (const Seen& s : seen) got.push_back(s.kind + ":" + std::to_string(s.node) + ":" + s.client_id);
  ASSERT_GE(got.size(), 5u);
  got.resize(5);  // a loss after p2 may follow, reported once
  EXPECT_EQ(got, (std::vector<std::string>{"RESET:9:", "SYNCED:9:", "OPENED:9:p1", "PEER_LOST:9:",
                                           "OPENED:9:p2"}));
  EXPECT_EQ(seen[3].peer, fleet.peers[0].Text());
  FleetWatchPositions positions;
  ASSERT_TRUE(FleetWatchPositions::FromToken(seen[4].token, &positions).ok());
  EXPECT_EQ(positions.ResumeAfter(9), 82u);
  EXPECT_EQ(positions.ResumeAfter(7), 500u);  // nothing new here: its position stays
  stream.reset();  // stops and joins the peer's thread

  // The first call carried the client's token (the peer finds its own node in it, node
  // scope); the second, the position read from the peer: after its last message.
  const std::vector<std::string> requests = server.all_requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_NE(requests[0].find("POST /mqtt.connections.v1.ConnectionsService/WatchConnections "
                             "HTTP/1.0\r\n"),
            std::string::npos);
  const auto first = RequestOf(requests[0]);
  EXPECT_EQ(first.resume_token(), start.Token());
  EXPECT_EQ(first.resume_after(), 0u);
  EXPECT_EQ(first.scope(), connections_v1::CONNECTION_SCOPE_NODE);
  const auto second = RequestOf(requests[1]);
  EXPECT_EQ(second.resume_after(), 81u);
  EXPECT_TRUE(second.resume_token().empty());
}

}  // namespace
}  // namespace mqc
