// SPDX-License-Identifier: BSD-3-Clause
// Tests for the records that cross the shared rings (event_records.h): every record round-trips
// field for field; a decoder refuses a record that is short, long, or holds a value out of its
// range (an enum past its last value, a QoS of 3, a negative TTL, a kick that would forge a log
// line, a ban list that is too long or not canonical); and FormatUuid's text.
#include "link/event_records.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../support/ban_target.h"
#include "../support/connection_builder.h"
#include "link/ban_list.h"
#include "link/connection.h"
#include "link/shared_region.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

// Whether every strict prefix of `bytes`, and `bytes` with one more byte, is refused.
template <typename Record>
bool RefusesEveryCutAndAnExtraByte(const std::string& bytes) {
  Record record;
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    if (Decode(std::string_view(bytes).substr(0, cut), &record)) {
      ADD_FAILURE() << "a record cut to " << cut << " of " << bytes.size() << " bytes decoded";
      return false;
    }
  }
  return !Decode(bytes + "x", &record);
}

TEST(EventRecordsTest, EveryRecordRoundTripsAndRejectsTruncation) {
  ConnectionEvent e = TestConnectionRecord(9, "id\xc3\xa9");
  e.username = "user";
  e.auth_method = "SCRAM";
  e.close_time_ns = 77;
  e.close_reason = CloseReason::kKicked;
  e.clean_session = false;
  std::string bytes;
  Encode(e, &bytes);
  ConnectionEvent back;
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.client_id, e.client_id);
  EXPECT_EQ(back.auth_method, "SCRAM");
  EXPECT_EQ(back.close_reason, CloseReason::kKicked);
  EXPECT_FALSE(back.clean_session);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(Decode(std::string_view(bytes).substr(0, cut), &back)) << cut;
  }
  LogCommand log{LogLevel::kWarning, "hello"};
  Encode(log, &bytes);
  LogCommand log_back;
  ASSERT_TRUE(Decode(bytes, &log_back));
  EXPECT_EQ(log_back.text, "hello");
  EXPECT_EQ(log_back.level, LogLevel::kWarning);
  bytes[0] = 0x03;  // not a log level
  EXPECT_FALSE(Decode(bytes, &log_back));
  SubscriptionEvent sub{1, 3, "t"};  // QoS 3 does not exist
  Encode(sub, &bytes);
  EXPECT_FALSE(Decode(bytes, &sub));

  OfflineSessionEvent offline;
  offline.seq = 4;
  offline.uid[0] = 4;
  offline.since_ns = 5;
  offline.expiry_time_ns = 3600'000'000'000;
  offline.client_id = "sleeper";
  offline.username = "alice";
  offline.protocol_version = 5;
  Encode(offline, &bytes);
  OfflineSessionEvent offline_back;
  ASSERT_TRUE(Decode(bytes, &offline_back));
  EXPECT_EQ(offline_back.client_id, "sleeper");
  EXPECT_EQ(offline_back.username, "alice");
  EXPECT_EQ(offline_back.expiry_time_ns, offline.expiry_time_ns);
  EXPECT_EQ(offline_back.protocol_version, 5);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(Decode(std::string_view(bytes).substr(0, cut), &offline_back)) << cut;
  }
  Encode(OfflineSessionEndEvent{4}, &bytes);
  OfflineSessionEndEvent end_back;
  ASSERT_TRUE(Decode(bytes, &end_back));
  EXPECT_EQ(end_back.seq, 4u);
  EXPECT_FALSE(Decode(std::string_view(bytes).substr(0, 7), &end_back));
}

// Every field of a connection record, each set to a value that is not its default, comes back;
// decoding into a record that held another connection leaves nothing of it.
TEST(EventRecordsTest, AConnectionRecordCarriesEveryField) {
  ConnectionEvent sent;
  sent.seq = 0x0102030405060708;
  for (std::size_t i = 0; i < sent.uid.size(); ++i)
    sent.uid[i] = static_cast<std::uint8_t>(0xf0 + i);
  sent.open_time_ns = -3;
  sent.close_time_ns = 1'700'000'000'000'000'000;
  sent.close_reason = CloseReason::kAccessRevoked;
  sent.protocol_version = 5;
  sent.clean_session = false;
  sent.auth_mechanism = AuthMechanism::kEnhanced;
  sent.auth_state = AuthState::kFailure;
  sent.keep_alive = 65535;
  sent.port = 65534;
  sent.local_port = 8883;
  sent.stats_slot = 12;
  sent.client_id = std::string("with\0nul", 8);
  sent.username = "user";
  sent.ip_address = "::ffff:10.0.0.1";
  sent.auth_method = "SCRAM-SHA-256";
  sent.peer_certificate_subject = "CN=device,O=example";
  sent.bridge = BridgeRole::kIncoming;
  sent.proxy_address = "10.0.0.2";
  sent.proxy_port = 41000;
  std::string bytes;
  Encode(sent, &bytes);

  ConnectionEvent back = TestConnectionRecord(1, "someone else");
  back.username = "old";
  back.peer_certificate_subject = "CN=old";
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.seq, sent.seq);
  EXPECT_EQ(back.uid, sent.uid);
  EXPECT_EQ(back.open_time_ns, -3);
  EXPECT_EQ(back.close_time_ns, sent.close_time_ns);
  EXPECT_EQ(back.close_reason, CloseReason::kAccessRevoked);
  EXPECT_EQ(back.protocol_version, 5);
  EXPECT_FALSE(back.clean_session);
  EXPECT_EQ(back.auth_mechanism, AuthMechanism::kEnhanced);
  EXPECT_EQ(back.auth_state, AuthState::kFailure);
  EXPECT_EQ(back.keep_alive, 65535);
  EXPECT_EQ(back.port, 65534);
  EXPECT_EQ(back.local_port, 8883);
  EXPECT_EQ(back.stats_slot, 12u);
  EXPECT_EQ(back.client_id, sent.client_id);
  EXPECT_EQ(back.username, "user");
  EXPECT_EQ(back.ip_address, "::ffff:10.0.0.1");
  EXPECT_EQ(back.auth_method, "SCRAM-SHA-256");
  EXPECT_EQ(back.peer_certificate_subject, "CN=device,O=example");
  EXPECT_EQ(back.bridge, BridgeRole::kIncoming);
  EXPECT_EQ(back.proxy_address, "10.0.0.2");
  EXPECT_EQ(back.proxy_port, 41000);
  EXPECT_TRUE(RefusesEveryCutAndAnExtraByte<ConnectionEvent>(bytes));
}

// An enum one past its last value, or a clean-session byte other than 0 and 1, is refused: the
// companion never holds a value its switch statements do not know.
TEST(EventRecordsTest, AConnectionRecordWithAValueOutOfRangeIsRefused) {
  const ConnectionEvent good = TestConnectionRecord(3, "c");
  std::string bytes;
  ConnectionEvent back;
  Encode(good, &bytes);
  ASSERT_TRUE(Decode(bytes, &back));

  ConnectionEvent bad = good;
  bad.close_reason =
      static_cast<CloseReason>(static_cast<std::uint8_t>(CloseReason::kAccessRevoked) + 1);
  Encode(bad, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
  bad = good;
  bad.auth_mechanism =
      static_cast<AuthMechanism>(static_cast<std::uint8_t>(AuthMechanism::kEnhanced) + 1);
  Encode(bad, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
  bad = good;
  bad.auth_state = static_cast<AuthState>(static_cast<std::uint8_t>(AuthState::kFailure) + 1);
  Encode(bad, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
  bad = good;
  bad.bridge = static_cast<BridgeRole>(static_cast<std::uint8_t>(BridgeRole::kIncoming) + 1);
  Encode(bad, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));

  // The clean-session byte follows seq, uid, open and close time, close reason and version.
  Encode(good, &bytes);
  const std::size_t clean_at = sizeof(good.seq) + sizeof(good.uid) + sizeof(good.open_time_ns) +
                               sizeof(good.close_time_ns) + sizeof(good.close_reason) +
                               sizeof(good.protocol_version);
  ASSERT_EQ(bytes[clean_at], 1);  // TestConnectionRecord is a clean session
  bytes[clean_at] = 0;
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_FALSE(back.clean_session);
  bytes[clean_at] = 2;
  EXPECT_FALSE(Decode(bytes, &back));
}

// A string's length prefix that claims more than the record holds is refused, not read past.
TEST(EventRecordsTest, AStringLongerThanTheRecordIsRefused) {
  std::string bytes;
  Encode(SubscriptionEvent{7, 1, "events/a"}, &bytes);
  SubscriptionEvent back;
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.seq, 7u);
  EXPECT_EQ(back.qos, 1);
  EXPECT_EQ(back.filter, "events/a");
  const std::size_t length_at = sizeof(back.seq) + sizeof(back.qos);
  bytes[length_at] = 9;  // 9 bytes announced, 8 follow
  EXPECT_FALSE(Decode(bytes, &back));
  bytes[length_at] = 8;
  bytes[length_at + 3] = static_cast<char>(0xff);  // about 4 GiB announced
  EXPECT_FALSE(Decode(bytes, &back));
}

TEST(EventRecordsTest, CloseRecordsCarryTheFinalTrafficAndIdleTime) {
  CloseEvent sent;
  sent.seq = 42;
  sent.close_time_ns = 123456789;
  sent.reason = CloseReason::kSessionTakenOver;
  sent.totals = {1, 2, 3, 4, 5};
  sent.idle_ns = 2'000'000'000;
  std::string bytes;
  Encode(sent, &bytes);
  CloseEvent back;
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.seq, 42u);
  EXPECT_EQ(back.close_time_ns, 123456789);
  EXPECT_EQ(back.reason, CloseReason::kSessionTakenOver);
  EXPECT_EQ(back.totals.publish_count, 1u);
  EXPECT_EQ(back.totals.publish_bytes, 2u);
  EXPECT_EQ(back.totals.deliver_count, 3u);
  EXPECT_EQ(back.totals.deliver_bytes, 4u);
  EXPECT_EQ(back.totals.request_count, 5u);
  EXPECT_EQ(back.idle_ns, 2'000'000'000);
  EXPECT_TRUE(RefusesEveryCutAndAnExtraByte<CloseEvent>(bytes));
  sent.reason = static_cast<CloseReason>(200);
  Encode(sent, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
}

TEST(EventRecordsTest, EveryQosRoundTripsAndNoOther) {
  for (std::uint8_t qos = 0; qos <= 3; ++qos) {
    SCOPED_TRACE(static_cast<int>(qos));
    std::string bytes;
    Encode(SubscriptionEvent{1, qos, ""}, &bytes);
    SubscriptionEvent back;
    EXPECT_EQ(Decode(bytes, &back), qos <= 2);
    if (qos <= 2) {
      EXPECT_EQ(back.qos, qos);
    }
  }
}

TEST(EventRecordsTest, ResyncAndSessionEndRecordsAreOneNumber) {
  std::string bytes;
  Encode(ResyncEvent{0xfedcba9876543210}, &bytes);
  EXPECT_EQ(bytes.size(), 8u);
  ResyncEvent resync;
  ASSERT_TRUE(Decode(bytes, &resync));
  EXPECT_EQ(resync.generation, 0xfedcba9876543210u);
  EXPECT_TRUE(RefusesEveryCutAndAnExtraByte<ResyncEvent>(bytes));
  Encode(OfflineSessionEndEvent{77}, &bytes);
  EXPECT_TRUE(RefusesEveryCutAndAnExtraByte<OfflineSessionEndEvent>(bytes));
}

TEST(EventRecordsTest, AnOfflineSessionOfAnUnknownProtocolIsRefused) {
  OfflineSessionEvent sent;
  sent.seq = 1;
  sent.client_id = "c";
  for (std::uint8_t version = 0; version <= 6; ++version) {
    SCOPED_TRACE(static_cast<int>(version));
    sent.protocol_version = version;  // 0: unknown (restored from the persistence file)
    std::string bytes;
    Encode(sent, &bytes);
    OfflineSessionEvent back;
    EXPECT_EQ(Decode(bytes, &back), version <= 5);
  }
}

// A bridge role names one connection (unknown too: unreadable), or (seq 0) says that the rest
// are no bridges; nothing else: a role out of range, or seq 0 with another role, is refused.
TEST(EventRecordsTest, BridgeRecordsNameOneConnectionOrTheRestAsNoBridge) {
  std::string bytes;
  BridgeEvent back;
  Encode(BridgeEvent{7, BridgeRole::kIncoming}, &bytes);
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.seq, 7u);
  EXPECT_EQ(back.role, BridgeRole::kIncoming);
  EXPECT_TRUE(RefusesEveryCutAndAnExtraByte<BridgeEvent>(bytes));
  Encode(BridgeEvent{0, BridgeRole::kNone}, &bytes);
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.seq, 0u);
  EXPECT_EQ(back.role, BridgeRole::kNone);
  Encode(BridgeEvent{0, BridgeRole::kIncoming}, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
  Encode(BridgeEvent{7, BridgeRole::kUnknown}, &bytes);
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.role, BridgeRole::kUnknown);
  Encode(BridgeEvent{0, BridgeRole::kUnknown}, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
  Encode(BridgeEvent{7, static_cast<BridgeRole>(4)}, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
}

TEST(EventRecordsTest, SettingsRoundTripAndRefuseANegativeTtlOrAnUnknownPattern) {
  std::string bytes;
  Encode(SettingsEvent{DefaultPattern::kNone, 500, 3600}, &bytes);
  SettingsEvent back;
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.default_pattern, DefaultPattern::kNone);
  EXPECT_EQ(back.closed_max, 500u);
  EXPECT_EQ(back.closed_ttl_ns, 3600);
  EXPECT_TRUE(RefusesEveryCutAndAnExtraByte<SettingsEvent>(bytes));
  Encode(SettingsEvent{DefaultPattern::kStore, 0, 0}, &bytes);
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.default_pattern, DefaultPattern::kStore);
  EXPECT_EQ(back.closed_ttl_ns, 0);
  Encode(SettingsEvent{DefaultPattern::kEvents, 1, -1}, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
  Encode(SettingsEvent{static_cast<DefaultPattern>(3), 1, 1}, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
}

TEST(EventRecordsTest, EveryLogLevelRoundTrips) {
  for (const LogLevel level :
       {LogLevel::kInfo, LogLevel::kNotice, LogLevel::kWarning, LogLevel::kError}) {
    std::string bytes;
    Encode(LogCommand{level, "line"}, &bytes);
    LogCommand back;
    ASSERT_TRUE(Decode(bytes, &back));
    EXPECT_EQ(back.level, level);
    EXPECT_EQ(back.text, "line");
    EXPECT_TRUE(RefusesEveryCutAndAnExtraByte<LogCommand>(bytes));
  }
  for (const int raw : {0x00, 0x10, 0xff}) {
    std::string bytes;
    Encode(LogCommand{static_cast<LogLevel>(raw), "line"}, &bytes);
    LogCommand back;
    EXPECT_FALSE(Decode(bytes, &back)) << raw;
  }
}

// An encoder replaces what the buffer held: the rings reuse one buffer for every record.
TEST(EventRecordsTest, EncodingReplacesTheBuffer) {
  std::string fresh;
  Encode(ResyncEvent{5}, &fresh);
  std::string reused = "left over from the previous record";
  Encode(ResyncEvent{5}, &reused);
  EXPECT_EQ(reused, fresh);
  ResyncEvent back;
  EXPECT_TRUE(Decode(reused, &back));
}

TEST(EventRecordsTest, FormatUuidWritesLowerCaseHexInTheUsualGroups) {
  EXPECT_EQ(FormatUuid(Uuid{}), "00000000-0000-0000-0000-000000000000");
  Uuid counting{};
  for (std::size_t i = 0; i < counting.size(); ++i) counting[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(FormatUuid(counting), "00010203-0405-0607-0809-0a0b0c0d0e0f");
  Uuid ones{};
  ones.fill(0xff);
  EXPECT_EQ(FormatUuid(ones), "ffffffff-ffff-ffff-ffff-ffffffffffff");
  Uuid v4{};
  v4[0] = 0xAB;
  v4[6] = 0x4c;
  v4[8] = 0x9D;
  EXPECT_EQ(FormatUuid(v4), "ab000000-0000-4c00-9d00-000000000000");
}

TEST(EventRecordsTest, ParseFormattedUuidReadsBackOnlyWhatFormatUuidWrites) {
  Uuid counting{};
  for (std::size_t i = 0; i < counting.size(); ++i) {
    counting[i] = static_cast<std::uint8_t>(i * 17 + 3);
  }
  const std::optional<Uuid> read = ParseFormattedUuid(FormatUuid(counting));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(*read, counting);
  for (const char* other :
       {"", "not-a-uuid", "AB000000-0000-4c00-9d00-000000000000",
        "ab000000-0000-4c00-9d00-00000000000", "ab000000-0000-4c00-9d00-0000000000000",
        "ab0000000000-4c00-9d00-0000-00000000", "ab000000-0000-4c00-9d00-00000000000g"}) {
    EXPECT_FALSE(ParseFormattedUuid(other).has_value()) << other;
  }
}

TEST(KickCommandTest, TheDecoderChecksBoundsAndFormat) {
  const auto decodes = [](const KickCommand& command) {
    std::string bytes;
    Encode(command, &bytes);
    KickCommand decoded;
    return Decode(bytes, &decoded) && decoded.client_id == command.client_id;
  };
  KickCommand good;
  good.client_id = "c";
  good.caller = "[::1]:5";
  EXPECT_TRUE(decodes(good));
  KickCommand bad = good;
  bad.client_id = "";
  EXPECT_FALSE(decodes(bad));
  bad.client_id = std::string("a\0b", 3);  // the broker looks the id up as a C string
  EXPECT_FALSE(decodes(bad));
  bad.client_id = std::string(kMaxKickClientIdBytes + 1, 'a');
  EXPECT_FALSE(decodes(bad));
  bad = good;
  bad.caller = "1.2.3.4:5\nforged log line";
  EXPECT_FALSE(decodes(bad));
  bad = good;
  bad.token_line = std::string(kMaxKickCallerBytes + 1, 'x');
  EXPECT_FALSE(decodes(bad));
  std::string bytes;
  Encode(good, &bytes);
  KickCommand decoded;
  EXPECT_FALSE(Decode(std::string_view(bytes).substr(0, bytes.size() - 1), &decoded));
  EXPECT_FALSE(Decode(bytes + "x", &decoded));
}

// The bounds are inclusive: the longest id and caller pass, and the whole kick comes back.
TEST(KickCommandTest, TheLongestFieldsPassWhole) {
  KickCommand sent;
  sent.client_id = std::string(kMaxKickClientIdBytes, '\xc3');  // any byte but NUL
  sent.caller = std::string(kMaxKickCallerBytes, '~');
  sent.token_line = std::string(kMaxKickCallerBytes, ' ');
  std::string bytes;
  Encode(sent, &bytes);
  KickCommand back;
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_EQ(back.client_id, sent.client_id);
  EXPECT_EQ(back.caller, sent.caller);
  EXPECT_EQ(back.token_line, sent.token_line);
  EXPECT_TRUE(back.with_will);  // the default: MQTT publishes the will of a closed connection
  sent.with_will = false;
  Encode(sent, &bytes);
  ASSERT_TRUE(Decode(bytes, &back));
  EXPECT_FALSE(back.with_will);
  sent.token_line = "line\x7f";  // DEL is no printable ASCII
  Encode(sent, &bytes);
  EXPECT_FALSE(Decode(bytes, &back));
}

TEST(BansCommandTest, RoundTripAndBounds) {
  BansCommand sent;
  sent.sequence = 42;
  sent.bans = {Target("clientid", "c1", 5), Target("username", "u"),
               Target("peerhost_net", "10.0.0.0/8"), Target("peerhost", "::1")};
  std::string bytes;
  Encode(sent, &bytes);
  BansCommand read;
  ASSERT_TRUE(Decode(bytes, &read));
  EXPECT_EQ(read.sequence, 42u);
  ASSERT_EQ(read.bans.size(), 4u);
  EXPECT_EQ(read.bans[0].until_ns, 5);
  EXPECT_EQ(read.bans[2].who, "10.0.0.0/8");
  EXPECT_EQ(read.bans[2].prefix_len, 104);
  EXPECT_EQ(read.bans[3].as(), "peerhost");
  EXPECT_FALSE(Decode(bytes.substr(0, bytes.size() - 1), &read));
  EXPECT_FALSE(Decode(bytes + "x", &read));
  // A target that is not canonical (host bits set) is not what the companion sends.
  sent.bans = {Target("peerhost_net", "10.0.0.0/8")};
  sent.bans[0].who = "10.1.0.0/8";
  Encode(sent, &bytes);
  EXPECT_FALSE(Decode(bytes, &read));
  sent.bans.assign(kMaxBans + 1, Target("clientid", "c"));
  Encode(sent, &bytes);
  EXPECT_FALSE(Decode(bytes, &read));
  // The largest list fits the commands ring (half of its default capacity).
  sent.bans.assign(kMaxBans, Target("clientid", std::string(kMaxBanWhoBytes, 'c')));
  Encode(sent, &bytes);
  EXPECT_LE(bytes.size(), SharedRegionSizes{}.commands_capacity / 2);
}

// An empty list is a valid list (every ban lifted), and a decode replaces the list it decodes
// into.
TEST(BansCommandTest, AnEmptyListLiftsEveryBan) {
  std::string bytes;
  Encode(BansCommand{}, &bytes);
  BansCommand read;
  read.bans = {Target("clientid", "stale")};
  ASSERT_TRUE(Decode(bytes, &read));
  EXPECT_TRUE(read.bans.empty());
}

}  // namespace
}  // namespace mqc
