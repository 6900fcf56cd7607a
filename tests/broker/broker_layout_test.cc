// SPDX-License-Identifier: BSD-3-Clause
#include "broker/broker_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "../support/fake_broker.h"
#include "../support/laid_out_client.h"
#include "../support/matrix_brokers.h"
#include "link/shared_region.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;

// The layout with every offset moved 8 bytes on: what a table off by one pointer looks like.
BrokerLayout Shifted(const BrokerLayout& layout) {
  BrokerLayout shifted = layout;
  shifted.name = "shifted";
  for (FieldPlace& place : shifted.fields) {
    if (place.size != 0) place.offset = static_cast<std::uint16_t>(place.offset + 8);
  }
  return shifted;
}

TEST(BrokerLayoutTable, CandidatesPerVersion) {
  // TLS, ADNS, WebSockets (2.0: libwebsockets; 2.1: none, libwebsockets or built in).
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 0, 11)).size(), 16u);  // Debian's and upstream's
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 0, 12)).size(), 8u);
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 0, 14)).size(), 8u);
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 0, 22)).size(), 8u);
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 1, 2)).size(), 24u);  // v2.1.x and master
  EXPECT_TRUE(BrokerLayoutCandidates(Version(2, 0, 10)).empty());
  EXPECT_TRUE(BrokerLayoutCandidates(Version(2, 0, 23)).empty());
  EXPECT_TRUE(BrokerLayoutCandidates(Version(2, 2, 0)).empty());
  EXPECT_TRUE(BrokerLayoutCandidates(BrokerVersion{}).empty());
}

// A few places the matrix's brokers use, as measured with offsetof() against upstream's header
// (broker_layout.cc says how).
TEST(BrokerLayoutTable, MatrixBrokersPlaces) {
  const BrokerLayout* debian_2011 =
      Named(BrokerLayoutCandidates(Version(2, 0, 11)), "2.0.12 TLS ADNS WebSockets");
  ASSERT_NE(debian_2011, nullptr);
  const BrokerLayout* builtin_21 =
      Named(BrokerLayoutCandidates(Version(2, 1, 2)), "2.1 TLS builtin WebSockets");
  ASSERT_NE(builtin_21, nullptr);
  ASSERT_NE(&Master21Layout(), nullptr);
  const struct {
    const BrokerLayout* layout;
    LayoutField field;
    int offset;
  } places[] = {
      {debian_2011, LayoutField::kProtocol, 24},
      {debian_2011, LayoutField::kKeepalive, 64},
      {debian_2011, LayoutField::kCleanStart, 326},
      {debian_2011, LayoutField::kSubCount, 488},
      {debian_2011, LayoutField::kMsgsOutCount, 432},
      {debian_2011, LayoutField::kId, 40},
      {debian_2011, LayoutField::kSockKey, 568 + 40},
      {&Debian2021Layout(), LayoutField::kCleanStart, 325},
      {&Debian2021Layout(), LayoutField::kSessionExpiryInterval, 336},
      {&Debian2021Layout(), LayoutField::kMsgsOutQueuedCount, 480},
      {&Debian2021Layout(), LayoutField::kSubCount, 536},
      {builtin_21, LayoutField::kProtocol, 80},
      {builtin_21, LayoutField::kIsBridge, 438},
      {builtin_21, LayoutField::kSubCount, 636},
      {builtin_21, LayoutField::kAddress, 88},
      {builtin_21, LayoutField::kUsername, 104},
      {builtin_21, LayoutField::kSockKey, 712 + 40},
      {builtin_21, LayoutField::kRemotePort, 784},
      // Master's password_len: 8 bytes more from `state` on.
      {&Master21Layout(), LayoutField::kKeepalive, 124},
      {&Master21Layout(), LayoutField::kCleanStart, 430},
      {&Master21Layout(), LayoutField::kSubCount, 644},
      {&Master21Layout(), LayoutField::kMsgsOutQueuedCount, 456 + 72 + 56},
      {&Master21Layout(), LayoutField::kSockKey, 720 + 40},
      {&Master21Layout(), LayoutField::kRemotePort, 792},
      // `will`: 88 bytes after keepalive on 2.0, 100 on 2.1.0-2.1.2 (offsetof against
      // v2.1.2's header with TLS and built-in WebSockets: 224), 108 on master.
      {debian_2011, LayoutField::kWill, 152},
      {&Debian2021Layout(), LayoutField::kWill, 152},
      {builtin_21, LayoutField::kWill, 224},
      {&Master21Layout(), LayoutField::kWill, 232},
  };
  for (const auto& expected : places) {
    EXPECT_EQ(expected.layout->place(expected.field).offset, expected.offset)
        << expected.layout->name << " " << LayoutFieldName(expected.field);
  }
  EXPECT_EQ(debian_2011->place(LayoutField::kMsgsOutQueuedCount).size, 0);
  EXPECT_EQ(builtin_21->End(), 786u);
  EXPECT_EQ(Debian2021Layout().place(LayoutField::kRemotePort).size, 0);  // read on 2.1 only
}

TEST(BrokerLayoutTable, ProtocolEncodings) {
  EXPECT_EQ(ProtocolVersionOf(ProtocolEncoding::k20, 1), 3);
  EXPECT_EQ(ProtocolVersionOf(ProtocolEncoding::k20, 2), 4);
  EXPECT_EQ(ProtocolVersionOf(ProtocolEncoding::k20, 4), 0);
  EXPECT_EQ(ProtocolVersionOf(ProtocolEncoding::k21, 4), 4);
  EXPECT_EQ(ProtocolVersionOf(ProtocolEncoding::k21, 1), 0);  // 2.1's mqtts
  EXPECT_EQ(ProtocolVersionOf(ProtocolEncoding::k21, 5), 5);
}

TEST(BrokerLayoutVerifier, TheRightCandidateVerifiesAmongTheOthers) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  BrokerLayoutVerifier verifier(BrokerLayoutCandidates(Version(2, 0, 21)), Version(2, 0, 21));
  verifier.Start(broker);
  EXPECT_TRUE(broker.log.empty());
  std::vector<FakeClient> clients{LaidOut(truth, "a", true, 60), LaidOut(truth, "b", false, 30),
                                  LaidOut(truth, "c", true, 15)};
  EXPECT_FALSE(verifier.Read(broker, clients[0].handle(), LayoutField::kSubCount).has_value());
  Traffic(&broker, &verifier, &clients, truth);

  ASSERT_TRUE(verifier.verified());
  EXPECT_EQ(verifier.layout(), &truth);
  ASSERT_EQ(broker.log.size(), 1u);
  EXPECT_THAT(broker.log[0].second,
              HasSubstr("broker layout: verified 2.0.15-2.0.22 TLS ADNS WebSockets for Mosquitto "
                        "2.0.21"));
  EXPECT_THAT(broker.log[0].second, HasSubstr("(after 1 observation: "));
  // The values a later reader gets.
  EXPECT_EQ(verifier.Read(broker, clients[1].handle(), LayoutField::kSessionExpiryInterval), 3600);
  Put(&clients[2], truth, LayoutField::kMsgsOutQueuedCount, 42);
  EXPECT_EQ(verifier.Read(broker, clients[2].handle(), LayoutField::kMsgsOutQueuedCount), 42);
  EXPECT_FALSE(verifier.Read(broker, clients[2].handle(), LayoutField::kMsgsOutCount).has_value());
  EXPECT_EQ(broker.log.size(), 1u);  // the rest of the traffic agreed: no more lines
}

// Item 5 of the issue: one client's CONNECT (it has an id and a socket) verifies the layout.
TEST(BrokerLayoutVerifier, OneConnectIsEnough) {
  for (const BrokerVersion& version : {Version(2, 0, 11), Version(2, 0, 21), Version(2, 1, 2)}) {
    for (const BrokerLayout* truth : BrokerLayoutCandidates(version)) {
      SCOPED_TRACE(std::string(truth->name) + " as " + version.Text());
      FakeBroker broker =
          truth->protocol == ProtocolEncoding::k21 ? FakeBroker::Api21() : FakeBroker::Api20();
      BrokerLayoutVerifier verifier(BrokerLayoutCandidates(version), version);
      FakeClient client = LaidOut(*truth, "first", false, 60);
      client.facts.username = "device";
      verifier.Observe(broker, client.handle());
      ASSERT_TRUE(verifier.verified());
      EXPECT_EQ(verifier.layout(), truth);
      EXPECT_EQ(verifier.Read(broker, client.handle(), LayoutField::kSessionExpiryInterval), 3600);
    }
  }
}

// What proves nothing: a client without a socket (hh_sock is not keyed by it), and one whose
// username accessor answers something else (an outgoing bridge's context gets its bridge's
// local_username). Neither refuses the layout either; the next CONNECT verifies it.
TEST(BrokerLayoutVerifier, AClientWithoutSocketOrWithAnotherUsernameProvesNothing) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  BrokerLayoutVerifier verifier({&truth}, Version(2, 0, 21));
  FakeClient offline = LaidOut(truth, "offline", false, 60);
  offline.socket = -1;
  verifier.Observe(broker, offline.handle());
  EXPECT_TRUE(verifier.verifying());
  FakeClient bridge = LaidOut(truth, "bridge", false, 60);
  bridge.facts.username = "bridge-user";
  bridge.struct_username = "remote-user";
  verifier.Observe(broker, bridge.handle());
  EXPECT_TRUE(verifier.verifying());
  FakeClient next = LaidOut(truth, "next", true, 30);
  verifier.Observe(broker, next.handle());
  EXPECT_TRUE(verifier.verified());
}

TEST(BrokerLayoutVerifier, DebiansBackportIsToldFromUpstreams2011) {
  FakeBroker broker = FakeBroker::Api20();
  const std::vector<const BrokerLayout*> candidates = BrokerLayoutCandidates(Version(2, 0, 11));
  const BrokerLayout& truth = *Named(candidates, "2.0.11 TLS ADNS WebSockets");  // upstream's
  BrokerLayoutVerifier verifier(candidates, Version(2, 0, 11));
  std::vector<FakeClient> clients{LaidOut(truth, "a", true, 60), LaidOut(truth, "b", true, 60),
                                  LaidOut(truth, "c", true, 60)};
  Traffic(&broker, &verifier, &clients, truth);
  ASSERT_TRUE(verifier.verified());
  EXPECT_STREQ(verifier.layout()->name, "2.0.11 TLS ADNS WebSockets");
}

TEST(BrokerLayoutVerifier, AShiftedLayoutIsSwitchedOffAndReadsNothingMore) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  const BrokerLayout shifted = Shifted(truth);
  BrokerLayoutVerifier verifier({&shifted}, Version(2, 0, 21));
  std::vector<FakeClient> clients{LaidOut(truth, "a", true, 60), LaidOut(truth, "b", true, 60),
                                  LaidOut(truth, "c", true, 60)};
  verifier.Observe(broker, clients[0].handle());

  EXPECT_EQ(verifier.state(), BrokerLayoutVerifier::State::kUnknown);
  ASSERT_EQ(broker.log.size(), 1u);
  EXPECT_EQ(broker.log[0].first, LogLevel::kWarning);
  EXPECT_THAT(broker.log[0].second, HasSubstr("broker layout: unknown: "));
  EXPECT_THAT(broker.log[0].second, HasSubstr("shifted: "));
  EXPECT_THAT(broker.log[0].second, HasSubstr("shown as unknown"));
  const int reads = broker.bytes_reads;
  Traffic(&broker, &verifier, &clients, truth);
  EXPECT_FALSE(verifier.Read(broker, clients[1].handle(), LayoutField::kSubCount).has_value());
  EXPECT_EQ(broker.bytes_reads, reads);
  EXPECT_EQ(broker.log.size(), 1u);  // one line, once
}

// The log line names the field that disagreed, as struct mosquitto names it.
TEST(BrokerLayoutVerifier, ARefusalNamesTheFieldThatDisagreed) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  BrokerLayoutVerifier verifier({&truth}, Version(2, 0, 21));
  FakeClient client = LaidOut(truth, "a", true, 60);
  Put(&client, truth, LayoutField::kMsgsOutQueuedCount, -3);
  verifier.Observe(broker, client.handle());
  EXPECT_EQ(verifier.state(), BrokerLayoutVerifier::State::kUnknown);
  ASSERT_EQ(broker.log.size(), 1u);
  EXPECT_THAT(broker.log[0].second, HasSubstr("msgs_out.queued_count reads -3"));
}

TEST(BrokerLayoutTable, EveryFieldHasItsOwnName) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < kLayoutFieldCount; ++i) {
    names.emplace_back(LayoutFieldName(static_cast<LayoutField>(i)));
  }
  EXPECT_EQ(names[static_cast<std::size_t>(LayoutField::kSessionExpiryInterval)],
            "session_expiry_interval");
  EXPECT_EQ(names[static_cast<std::size_t>(LayoutField::kMsgsInCount)], "msgs_in.msg_count");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

// A shifted layout whose places happen to hold what the accessors say (protocol, keepalive,
// clean start, subscription count, plausible counts) is still refused at once: its pointers
// are not the broker's.
TEST(BrokerLayoutVerifier, AccessorValuesThatAgreeByChanceDoNotProveAShiftedLayout) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  const BrokerLayout shifted = Shifted(truth);
  BrokerLayoutVerifier verifier({&shifted}, Version(2, 0, 21));
  FakeClient lucky = LaidOut(truth, "a", true, 60);
  // What the shifted layout reads, set to what the accessors say.
  Put(&lucky, shifted, LayoutField::kProtocol, 2);
  Put(&lucky, shifted, LayoutField::kKeepalive, 60);
  Put(&lucky, shifted, LayoutField::kCleanStart, 1);
  Put(&lucky, shifted, LayoutField::kSubCount, 0);
  Put(&lucky, shifted, LayoutField::kIsBridge, 0);
  Put(&lucky, shifted, LayoutField::kSessionExpiryTime, 0);
  for (LayoutField field : {LayoutField::kMsgsInInflightCount, LayoutField::kMsgsInQueuedCount,
                            LayoutField::kMsgsOutInflightCount, LayoutField::kMsgsOutQueuedCount}) {
    Put(&lucky, shifted, field, 0);
  }
  verifier.Observe(broker, lucky.handle());
  EXPECT_EQ(verifier.state(), BrokerLayoutVerifier::State::kUnknown);
  ASSERT_EQ(broker.log.size(), 1u);
  EXPECT_THAT(broker.log[0].second,
              HasSubstr("shifted: id does not hold the pointer the broker's accessor returns"));
}

// Two candidates of a version that give different figures differ in their anchors too, so
// that one CONNECT tells them apart; the one exception is 2.1 built with libwebsockets against
// master without WebSockets (wsi after subs_count moves hh_sock as password_len does): they
// wait for a client holding a subscription (AnAmbiguousPairWaitsForASubscription).
// (Master's "TLS builtin WebSockets" has its hh_sock where 2.1.2's "TLS ADNS builtin
// WebSockets" has it: their `address` differs.)
TEST(BrokerLayoutTable, TheAnchorsTellEveryCandidateApart) {
  for (const BrokerVersion& version : {Version(2, 0, 11), Version(2, 0, 12), Version(2, 0, 13),
                                       Version(2, 0, 22), Version(2, 1, 2)}) {
    const std::vector<const BrokerLayout*> candidates = BrokerLayoutCandidates(version);
    for (const BrokerLayout* a : candidates) {
      for (const BrokerLayout* b : candidates) {
        if (a == b) continue;
        const bool same_anchors =
            a->place(LayoutField::kAddress).offset == b->place(LayoutField::kAddress).offset &&
            a->place(LayoutField::kSockKey).offset == b->place(LayoutField::kSockKey).offset;
        const std::string names = std::string(a->name) + " / " + b->name;
        // "2.1 <options> libwebsockets" beside "2.1-43c27150 <options>".
        auto options = [](std::string name) {
          for (const char* part : {" libwebsockets", "-43c27150"}) {
            const std::size_t at = name.find(part);
            if (at != std::string::npos) name.erase(at, std::strlen(part));
          }
          return name;
        };
        const std::string a_name = a->name;
        const std::string b_name = b->name;
        const bool a_lws = a_name.find("libwebsockets") != std::string::npos;
        const bool b_lws = b_name.find("libwebsockets") != std::string::npos;
        const bool a_master = a_name.find("43c27150") != std::string::npos;
        const bool b_master = b_name.find("43c27150") != std::string::npos;
        const bool lws_and_master = ((a_lws && !a_master && b_master && !b_lws) ||
                                     (b_lws && !b_master && a_master && !a_lws)) &&
                                    options(a_name) == options(b_name);
        EXPECT_EQ(same_anchors && !a->SameFigures(*b), lws_and_master) << names;
      }
    }
  }
}

// Such a pair: the CONNECT verifies nothing, the first observation with a subscription (the
// other layout reads the NULL wsi's half there) decides.
TEST(BrokerLayoutVerifier, AnAmbiguousPairWaitsForASubscription) {
  FakeBroker broker = FakeBroker::Api21();
  const std::vector<const BrokerLayout*> all = BrokerLayoutCandidates(Version(2, 1, 2));
  const BrokerLayout& truth = *Named(all, "2.1-43c27150");
  const BrokerLayout& lws = *Named(all, "2.1 libwebsockets");
  BrokerLayoutVerifier verifier(all, Version(2, 1, 2));
  FakeClient client = LaidOut(truth, "first", false, 60);
  // What the other reads agrees too (as a real struct's neighbours may), then the truth's own.
  for (LayoutField field : {LayoutField::kCleanStart, LayoutField::kSubCount,
                            LayoutField::kIsBridge, LayoutField::kSessionExpiryTime,
                            LayoutField::kMsgsInInflightCount, LayoutField::kMsgsInQueuedCount,
                            LayoutField::kMsgsOutInflightCount, LayoutField::kMsgsOutQueuedCount}) {
    Put(&client, lws, field, 0);
  }
  for (LayoutField field : {LayoutField::kCleanStart, LayoutField::kSubCount,
                            LayoutField::kIsBridge, LayoutField::kSessionExpiryTime}) {
    Put(&client, truth, field, 0);
  }
  verifier.Observe(broker, client.handle());
  EXPECT_TRUE(verifier.verifying());
  SetSubCount(&client, truth, 1);
  verifier.Observe(broker, client.handle());
  ASSERT_TRUE(verifier.verified());
  EXPECT_EQ(verifier.layout(), &truth);
}

// Debian's 2.0.11 and upstream's 2.0.11 without WebSockets give the same figures: the CONNECT
// verifies, and the right one stays when a subscription tells them apart.
TEST(BrokerLayoutVerifier, LayoutsWithTheSameFiguresVerifyAtOnceAndKeepTheRightOne) {
  FakeBroker broker = FakeBroker::Api20();
  const std::vector<const BrokerLayout*> all = BrokerLayoutCandidates(Version(2, 0, 11));
  const BrokerLayout& debian = *Named(all, "2.0.12 TLS ADNS WebSockets");
  const BrokerLayout& upstream = *Named(all, "2.0.11 TLS ADNS");
  for (const BrokerLayout* truth : {&debian, &upstream}) {
    SCOPED_TRACE(truth->name);
    const BrokerLayout& other = truth == &debian ? upstream : debian;
    BrokerLayoutVerifier verifier(all, Version(2, 0, 11));
    FakeClient client = LaidOut(*truth, "first", true, 60);
    Put(&client, other, LayoutField::kSubCount, 0);
    verifier.Observe(broker, client.handle());
    ASSERT_TRUE(verifier.verified());
    SetSubCount(&client, *truth, 1);
    Put(&client, other, LayoutField::kSubCount, 0);
    verifier.Observe(broker, client.handle());
    ASSERT_TRUE(verifier.verified());
    EXPECT_EQ(verifier.layout(), truth);
  }
}

// ---- upstream's master (43c27150: `password_len` after `last_mid`), which says 2.1.2 ----

// A broker built from master: its offsets replayed. With master's layouts in the table it is
// verified as master (not as 2.1.2, whose keepalive and pointers still agree), and reads the
// right session expiry and counts.
TEST(BrokerLayoutVerifier, MastersOffsetsAreVerifiedAsMaster) {
  FakeBroker broker = FakeBroker::Api21();
  const BrokerLayout& master = Master21Layout();
  BrokerLayoutVerifier verifier(BrokerLayoutCandidates(Version(2, 1, 2)), Version(2, 1, 2));
  FakeClient client = LaidOut(master, "first", false, 60);
  client.facts.protocol_version = 5;
  Put(&client, master, LayoutField::kProtocol, 5);
  Put(&client, master, LayoutField::kSessionExpiryInterval, 3);
  Put(&client, master, LayoutField::kMsgsOutQueuedCount, 9);
  verifier.Observe(broker, client.handle());
  ASSERT_TRUE(verifier.verified());
  EXPECT_STREQ(verifier.layout()->name, "2.1-43c27150 TLS builtin WebSockets");
  EXPECT_EQ(verifier.Read(broker, client.handle(), LayoutField::kSessionExpiryInterval), 3);
  const std::optional<MessageCounts> counts = verifier.ReadMessageCounts(broker, client.handle());
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(counts->out.queued, 9u);
}

// The same broker against 2.1.2's layouts alone (a table without master's, as before this
// change; or the next inserted field): every one is refused at the first CONNECT, and nothing
// is ever read, whatever the accessor-backed fields happen to hold.
TEST(BrokerLayoutVerifier, AFieldInsertedBeforeTheReadFieldsIsRefusedWithoutAFigure) {
  FakeBroker broker = FakeBroker::Api21();
  const BrokerLayout& master = Master21Layout();
  std::vector<const BrokerLayout*> v212;
  for (const BrokerLayout* layout : BrokerLayoutCandidates(Version(2, 1, 2))) {
    if (std::string(layout->name).find("43c27150") == std::string::npos) v212.push_back(layout);
  }
  ASSERT_EQ(v212.size(), 12u);
  BrokerLayoutVerifier verifier(v212, Version(2, 1, 2));
  FakeClient client = LaidOut(master, "first", true, 60);
  // 2.1.2's places of the fields that moved, made to hold what the accessors say.
  const BrokerLayout& old = Builtin21Layout();
  Put(&client, old, LayoutField::kCleanStart, 1);
  Put(&client, old, LayoutField::kSubCount, 0);
  Put(&client, old, LayoutField::kIsBridge, 0);
  verifier.Observe(broker, client.handle());
  EXPECT_EQ(verifier.state(), BrokerLayoutVerifier::State::kUnknown);
  ASSERT_EQ(broker.log.size(), 1u);
  EXPECT_THAT(broker.log[0].second, HasSubstr("no layout for Mosquitto 2.1.2 matches"));
  EXPECT_FALSE(verifier.Read(broker, client.handle(), LayoutField::kSessionExpiryInterval));
  EXPECT_FALSE(verifier.ReadMessageCounts(broker, client.handle()).has_value());
  // And the other way: a 2.1.2 broker against master's layouts alone.
  FakeBroker other = FakeBroker::Api21();
  BrokerLayoutVerifier master_only({&master}, Version(2, 1, 2));
  FakeClient v212_client = LaidOut(old, "first", true, 60);
  master_only.Observe(other, v212_client.handle());
  EXPECT_EQ(master_only.state(), BrokerLayoutVerifier::State::kUnknown);
  EXPECT_THAT(other.log[0].second, HasSubstr("hh_sock.key does not point at the client's own"));
}

// A shift that the anchors cannot see (a 4-byte field hidden by padding before hh_sock): once
// verified, every observation checks the layout again, and the first disagreement of a field
// the accessors give switches it off for good, with one line.
TEST(BrokerLayoutVerifier, AVerifiedLayoutThatDisagreesLaterIsSwitchedOff) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  BrokerLayoutVerifier verifier({&truth}, Version(2, 0, 21));
  FakeClient client = LaidOut(truth, "a", true, 60);
  verifier.Observe(broker, client.handle());
  ASSERT_TRUE(verifier.verified());
  client.sub_count = 1;  // the accessor moves on; the place read does not
  verifier.Observe(broker, client.handle());
  EXPECT_EQ(verifier.state(), BrokerLayoutVerifier::State::kUnknown);
  ASSERT_EQ(broker.log.size(), 2u);
  EXPECT_THAT(broker.log[1].second,
              HasSubstr("the verified layout 2.0.15-2.0.22 TLS ADNS WebSockets disagrees now "
                        "(sub_count reads 0, the broker says 1)"));
  EXPECT_FALSE(verifier.Read(broker, client.handle(), LayoutField::kSubCount).has_value());
  const int reads = broker.bytes_reads;
  verifier.Observe(broker, client.handle());
  EXPECT_EQ(broker.bytes_reads, reads);
}

TEST(BrokerLayoutVerifier, ALayoutReachingPastTheAllocationIsRefusedUnread) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  // The struct as the table says, in an allocation 4 bytes short of the last field's end.
  FakeClient client = LaidOut(truth, "a", true, 60, truth.End() + 16);
  client.memory.resize(truth.End() - 4);
  BrokerLayoutVerifier verifier({&truth}, Version(2, 0, 21));
  verifier.Observe(broker, client.handle());
  EXPECT_EQ(verifier.state(), BrokerLayoutVerifier::State::kUnknown);
  EXPECT_EQ(broker.bytes_reads, 0);
  ASSERT_EQ(broker.log.size(), 1u);
  EXPECT_THAT(broker.log[0].second, HasSubstr("allocation has " + std::to_string(truth.End() - 4)));
}

TEST(BrokerLayoutVerifier, NoCandidateSaysWhyAtStart) {
  FakeBroker broker = FakeBroker::Api20();
  BrokerLayoutVerifier verifier(BrokerLayoutCandidates(BrokerVersion{}), BrokerVersion{});
  verifier.Start(broker);
  EXPECT_EQ(verifier.state(), BrokerLayoutVerifier::State::kUnknown);
  ASSERT_EQ(broker.log.size(), 1u);
  EXPECT_THAT(broker.log[0].second,
              HasSubstr("broker layout: unknown: no layout is known for Mosquitto unknown"));
}

// A shifted table beside the right one: the right one wins, the shifted one is gone.
TEST(BrokerLayoutVerifier, AShiftedCandidateBesideTheRightOneIsDropped) {
  FakeBroker broker = FakeBroker::Api21();
  const std::vector<const BrokerLayout*> candidates = BrokerLayoutCandidates(Version(2, 1, 2));
  const BrokerLayout& truth = *Named(candidates, "2.1 TLS builtin WebSockets");
  const BrokerLayout shifted = Shifted(truth);
  BrokerLayoutVerifier verifier({&shifted, &truth}, Version(2, 1, 2));
  std::vector<FakeClient> clients{LaidOut(truth, "a", true, 60), LaidOut(truth, "b", false, 20),
                                  LaidOut(truth, "c", true, 5)};
  Traffic(&broker, &verifier, &clients, truth);
  ASSERT_TRUE(verifier.verified());
  EXPECT_EQ(verifier.layout(), &truth);
}

// ---- the message counts ----

// Every layout's counts fit the one read ReadMessageCounts makes.
TEST(BrokerLayoutTable, MessageCountsSpanFitsOneRead) {
  for (const BrokerVersion& version :
       {Version(2, 0, 11), Version(2, 0, 13), Version(2, 0, 22), Version(2, 1, 2)}) {
    for (const BrokerLayout* layout : BrokerLayoutCandidates(version)) {
      std::size_t begin = SIZE_MAX;
      std::size_t end = 0;
      for (std::size_t i = static_cast<std::size_t>(LayoutField::kMsgsInInflightCount);
           i < kLayoutFieldCount; ++i) {
        if (layout->fields[i].size == 0) continue;
        begin = std::min<std::size_t>(begin, layout->fields[i].offset);
        end = std::max<std::size_t>(end, layout->fields[i].offset + layout->fields[i].size);
      }
      ASSERT_LT(begin, end) << layout->name;
      EXPECT_LE(end - begin, BrokerLayoutVerifier::kMaxCountsSpan) << layout->name;
    }
  }
}

TEST(BrokerLayoutVerifier, MessageCountsAreOneReadOnceVerified) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  BrokerLayoutVerifier verifier(BrokerLayoutCandidates(Version(2, 0, 21)), Version(2, 0, 21));
  std::vector<FakeClient> clients{LaidOut(truth, "a", true, 60), LaidOut(truth, "b", false, 20),
                                  LaidOut(truth, "c", true, 5)};
  Put(&clients[0], truth, LayoutField::kMsgsOutQueuedCount, 90);
  Put(&clients[0], truth, LayoutField::kMsgsOutInflightCount, 10);
  Put(&clients[0], truth, LayoutField::kMsgsInQueuedCount, 1);
  Put(&clients[0], truth, LayoutField::kMsgsInInflightCount, 2);
  EXPECT_FALSE(verifier.ReadMessageCounts(broker, clients[0].handle()).has_value());
  Traffic(&broker, &verifier, &clients, truth);
  ASSERT_TRUE(verifier.verified());
  const int reads = broker.bytes_reads;
  const std::optional<MessageCounts> counts =
      verifier.ReadMessageCounts(broker, clients[0].handle());
  EXPECT_EQ(broker.bytes_reads, reads + 1);
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(counts->out.known, MessageQueue::Known::kSplit);
  EXPECT_EQ(counts->out.queued, 90u);
  EXPECT_EQ(counts->out.in_flight, 10u);
  EXPECT_EQ(counts->out.total, 100u);
  EXPECT_EQ(counts->in.queued, 1u);
  EXPECT_EQ(counts->in.in_flight, 2u);
  // The same through the slot's word, and back.
  EXPECT_EQ(DecodeMessageQueue(EncodeMessageQueue(counts->out)), counts->out);
  // An allocation that ends inside the counts: nothing.
  FakeClient short_one = LaidOut(truth, "short", true, 60);
  short_one.memory.resize(truth.place(LayoutField::kMsgsOutQueuedCount).offset + 2);
  EXPECT_FALSE(verifier.ReadMessageCounts(broker, short_one.handle()).has_value());
  // A negative count: nothing.
  Put(&clients[1], truth, LayoutField::kMsgsInQueuedCount, -1);
  EXPECT_FALSE(verifier.ReadMessageCounts(broker, clients[1].handle()).has_value());
}

TEST(MessageQueueWord, EncodesWhatIsKnown) {
  MessageQueue split;
  split.known = MessageQueue::Known::kSplit;
  split.queued = 0x7fffffff;
  split.in_flight = 0;
  split.total = 0x7fffffff;
  EXPECT_EQ(DecodeMessageQueue(EncodeMessageQueue(split)), split);
  MessageQueue zero;
  zero.known = MessageQueue::Known::kSplit;
  EXPECT_NE(EncodeMessageQueue(zero), 0u);  // a known 0 is not unknown
  EXPECT_EQ(DecodeMessageQueue(EncodeMessageQueue(zero)), zero);
  MessageQueue total;
  total.known = MessageQueue::Known::kTotal;
  total.total = 12345;
  EXPECT_EQ(DecodeMessageQueue(EncodeMessageQueue(total)), total);
  EXPECT_EQ(EncodeMessageQueue(MessageQueue{}), 0u);
  EXPECT_EQ(DecodeMessageQueue(0), MessageQueue{});
}

}  // namespace
}  // namespace mqc
