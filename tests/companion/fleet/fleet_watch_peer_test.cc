// SPDX-License-Identifier: BSD-3-Clause
// The framing a fleet watch reads its peers' streams with: whole envelopes only, a size cap,
// and the end-of-stream's Connect error.
#include "companion/fleet/fleet_watch_peer.h"

#include <gtest/gtest.h>

#include <string>

#include "../../support/connection_builder.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/watch_stream.h"

namespace mqc {
namespace {

TEST(TakeEnvelopeTest, WholeEnvelopesOnlyInOrder) {
  std::string stream;
  AppendEnvelope(0, "first", &stream);
  AppendEnvelope(2, "{}", &stream);
  std::string buffer;
  std::uint8_t flags = 9;
  std::string payload;
  // Byte by byte: nothing until an envelope is complete.
  std::vector<std::string> got;
  for (const char c : stream) {
    buffer.push_back(c);
    while (TakeEnvelope(&buffer, 100, &flags, &payload) == 1) {
      got.push_back(std::to_string(flags) + ":" + payload);
    }
  }
  EXPECT_EQ(got, (std::vector<std::string>{"0:first", "2:{}"}));
  EXPECT_TRUE(buffer.empty());
}

TEST(TakeEnvelopeTest, AnEnvelopeOverTheCapIsRefusedBeforeItsBytesCome) {
  std::string buffer("\x00\x00\x00\x01\x00", 5);  // says 256 bytes
  std::uint8_t flags = 0;
  std::string payload;
  EXPECT_EQ(TakeEnvelope(&buffer, 255, &flags, &payload), -1);
  EXPECT_EQ(TakeEnvelope(&buffer, 256, &flags, &payload), 0);
}

TEST(EndOfStreamStatusTest, ReadsTheConnectError) {
  EXPECT_TRUE(EndOfStreamStatus("{}").ok());
  std::string end;
  AppendEndOfStream(Status(StatusCode::kUnavailable, "the companion is stopping"), &end);
  const Status status = EndOfStreamStatus(end.substr(5));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "unavailable: the companion is stopping");
  EXPECT_EQ(EndOfStreamStatus("[]").code(), StatusCode::kInternal);
  EXPECT_EQ(EndOfStreamStatus(R"({"error":{"message":"x"}})").code(), StatusCode::kInternal);
}

// What a peer sends in binary is what the fleet stream reads back: the kind, sequence, node id,
// the connection and the subscription; the fleet's own fields reach a binary client.
TEST(WatchProtoTest, APeersMessageReadsBackAndFleetFieldsAreWritten) {
  Connection connection = TestConnection(5);
  connection.node_id = 2;
  connection.client_id = "dev-1";
  Subscription subscription;
  subscription.filter = "a/#";
  subscription.qos = 1;
  connection.subscriptions = {subscription};
  WatchMessage message;
  message.sequence = 1234567890123ull;
  message.kind = ChangeKind::kSubscribed;
  message.connection = &connection;
  message.subscription = &connection.subscriptions.front();
  message.node_id = 2;
  DecodedWatchMessage read;
  ASSERT_TRUE(DecodeWatchConnectionsResponseProto(EncodeWatchConnectionsResponseProto(message),
                                                  "m", &read)
                  .ok());
  EXPECT_EQ(read.sequence, message.sequence);
  EXPECT_EQ(read.kind, ChangeKind::kSubscribed);
  EXPECT_EQ(read.node_id, 2u);
  ASSERT_TRUE(read.has_connection);
  EXPECT_EQ(read.connection.client_id, "dev-1");
  EXPECT_EQ(read.connection.node_id, 2u);
  ASSERT_TRUE(read.has_subscription);
  EXPECT_EQ(read.subscription.filter, "a/#");
  EXPECT_EQ(read.subscription.qos, 1);

  const PeerFailure failure{"http://127.0.0.1:9", "unavailable", "cannot connect"};
  WatchMessage lost;
  lost.kind = ChangeKind::kPeerLost;
  lost.node_id = 3;
  lost.resume_token = "VwA";
  lost.peer_error = &failure;
  connections_v1::WatchConnectionsResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(EncodeWatchConnectionsResponseProto(lost)));
  EXPECT_EQ(parsed.kind(), connections_v1::CONNECTION_CHANGE_KIND_PEER_LOST);
  EXPECT_EQ(parsed.node_id(), 3u);
  EXPECT_EQ(parsed.resume_token(), "VwA");
  EXPECT_EQ(parsed.peer_error().peer(), "http://127.0.0.1:9");
  EXPECT_EQ(parsed.peer_error().code(), "unavailable");
  EXPECT_FALSE(parsed.has_connection());

  EXPECT_FALSE(DecodeWatchConnectionsResponseProto("\x10\x63", "m", &read).ok());  // kind 99
  EXPECT_FALSE(DecodeWatchConnectionsResponseProto("\xff", "m", &read).ok());
}

}  // namespace
}  // namespace mqc
