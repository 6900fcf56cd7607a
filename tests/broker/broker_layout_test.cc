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
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 0, 11)).size(), 8u);  // Debian's and upstream's
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 0, 12)).size(), 4u);
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 0, 14)).size(), 4u);
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 0, 22)).size(), 4u);
  EXPECT_EQ(BrokerLayoutCandidates(Version(2, 1, 2)).size(), 8u);
  EXPECT_TRUE(BrokerLayoutCandidates(Version(2, 0, 10)).empty());
  EXPECT_TRUE(BrokerLayoutCandidates(Version(2, 0, 23)).empty());
  EXPECT_TRUE(BrokerLayoutCandidates(Version(2, 2, 0)).empty());
  EXPECT_TRUE(BrokerLayoutCandidates(BrokerVersion{}).empty());
}

// A few places the matrix's brokers use, as measured with offsetof() against upstream's header
// (broker_layout.cc says how).
TEST(BrokerLayoutTable, MatrixBrokersPlaces) {
  const BrokerLayout* debian_2011 =
      Named(BrokerLayoutCandidates(Version(2, 0, 11)), "2.0.12 TLS ADNS");
  ASSERT_NE(debian_2011, nullptr);
  const BrokerLayout* builtin_21 =
      Named(BrokerLayoutCandidates(Version(2, 1, 2)), "2.1 TLS builtin WebSockets");
  ASSERT_NE(builtin_21, nullptr);
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
      {&Debian2021Layout(), LayoutField::kCleanStart, 325},
      {&Debian2021Layout(), LayoutField::kSessionExpiryInterval, 336},
      {&Debian2021Layout(), LayoutField::kMsgsOutQueuedCount, 480},
      {&Debian2021Layout(), LayoutField::kSubCount, 536},
      {builtin_21, LayoutField::kProtocol, 80},
      {builtin_21, LayoutField::kIsBridge, 438},
      {builtin_21, LayoutField::kSubCount, 636},
  };
  for (const auto& expected : places) {
    EXPECT_EQ(expected.layout->place(expected.field).offset, expected.offset)
        << expected.layout->name << " " << LayoutFieldName(expected.field);
  }
  EXPECT_EQ(debian_2011->place(LayoutField::kMsgsOutQueuedCount).size, 0);
  EXPECT_EQ(builtin_21->End(), 640u);
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
              HasSubstr("broker layout: verified 2.0.15-2.0.22 TLS ADNS for Mosquitto 2.0.21"));
  // The values a later reader gets.
  EXPECT_EQ(verifier.Read(broker, clients[1].handle(), LayoutField::kSessionExpiryInterval), 3600);
  Put(&clients[2], truth, LayoutField::kMsgsOutQueuedCount, 42);
  EXPECT_EQ(verifier.Read(broker, clients[2].handle(), LayoutField::kMsgsOutQueuedCount), 42);
  EXPECT_FALSE(verifier.Read(broker, clients[2].handle(), LayoutField::kMsgsOutCount).has_value());
  // Decided: observing reads nothing more.
  const int reads = broker.bytes_reads;
  verifier.Observe(broker, clients[0].handle());
  EXPECT_EQ(broker.bytes_reads, reads);
}

TEST(BrokerLayoutVerifier, DebiansBackportIsToldFromUpstreams2011) {
  FakeBroker broker = FakeBroker::Api20();
  const std::vector<const BrokerLayout*> candidates = BrokerLayoutCandidates(Version(2, 0, 11));
  const BrokerLayout& truth = *Named(candidates, "2.0.11 TLS ADNS");  // upstream's own tag
  BrokerLayoutVerifier verifier(candidates, Version(2, 0, 11));
  std::vector<FakeClient> clients{LaidOut(truth, "a", true, 60), LaidOut(truth, "b", true, 60),
                                  LaidOut(truth, "c", true, 60)};
  Traffic(&broker, &verifier, &clients, truth);
  ASSERT_TRUE(verifier.verified());
  EXPECT_STREQ(verifier.layout()->name, "2.0.11 TLS ADNS");
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

// A layout that agrees at first (the shifted place happens to hold what the accessor says)
// is dropped at the first client where it does not.
TEST(BrokerLayoutVerifier, ALayoutThatAgreesByChanceIsDroppedLater) {
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
  EXPECT_TRUE(verifier.verifying());
  FakeClient other = LaidOut(truth, "b", true, 60);
  verifier.Observe(broker, other.handle());
  EXPECT_EQ(verifier.state(), BrokerLayoutVerifier::State::kUnknown);
}

TEST(BrokerLayoutVerifier, OneClientIsNotEnough) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  BrokerLayoutVerifier verifier({&truth}, Version(2, 0, 21));
  FakeClient client = LaidOut(truth, "a", true, 60);
  for (int i = 0; i < 40; ++i) {
    SetSubCount(&client, truth, i % 3);
    verifier.Observe(broker, client.handle());
  }
  EXPECT_TRUE(verifier.verifying());
  EXPECT_FALSE(verifier.Read(broker, client.handle(), LayoutField::kSubCount).has_value());
  EXPECT_TRUE(broker.log.empty());
}

TEST(BrokerLayoutVerifier, ClientsWithoutChangesAreNotEnough) {
  FakeBroker broker = FakeBroker::Api20();
  const BrokerLayout& truth = Debian2021Layout();
  BrokerLayoutVerifier verifier({&truth}, Version(2, 0, 21));
  std::vector<FakeClient> clients{LaidOut(truth, "a", true, 60), LaidOut(truth, "b", true, 60),
                                  LaidOut(truth, "c", true, 60)};
  for (int round = 0; round < 10; ++round) {
    for (FakeClient& client : clients) verifier.Observe(broker, client.handle());
  }
  EXPECT_TRUE(verifier.verifying());
  // One change is still not enough; the second decides.
  SetSubCount(&clients[0], truth, 1);
  verifier.Observe(broker, clients[0].handle());
  EXPECT_TRUE(verifier.verifying());
  SetSubCount(&clients[1], truth, 1);
  verifier.Observe(broker, clients[1].handle());
  EXPECT_TRUE(verifier.verified());
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
