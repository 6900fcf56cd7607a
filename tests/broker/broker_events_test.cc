// SPDX-License-Identifier: BSD-3-Clause
// The broker-side decisions (BrokerEvents) through a FakeBroker: what the plugin answers the
// broker on 2.0 and 2.1 (auth neutrality, bans), and what it records from the ACL checks of a
// resumed session, a reload's re-check and the nested check of the later ACL sources.
#include "broker/broker_events.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../support/broker_chain.h"
#include "../support/fake_broker.h"
#include "../support/laid_out_client.h"
#include "../support/matrix_brokers.h"
#include "../support/null_sink.h"
#include "broker_core_fixture.h"
#include "broker/queue_drops.h"

namespace mqc {
namespace {

// Keeps the offline sessions, connections and bridge roles announced; takes every other event.
class OfflineSink : public NullSink {
 public:
  using NullSink::Emit;
  bool Emit(const OfflineSessionEvent& event) override {
    offline.push_back(event);
    return true;
  }
  bool Emit(const ConnectionEvent& event) override {
    connections.push_back(event);
    return true;
  }
  bool Emit(const BridgeEvent& event) override {
    bridges.push_back(event);
    return true;
  }
  bool Emit(const CloseEvent& event) override {
    closes.push_back(event);
    return true;
  }
  bool Emit(EventType type, const SubscriptionEvent& event) override {
    subscriptions.emplace_back(type, event);
    return true;
  }
  std::vector<OfflineSessionEvent> offline;
  std::vector<ConnectionEvent> connections;
  std::vector<BridgeEvent> bridges;
  std::vector<CloseEvent> closes;
  std::vector<std::pair<EventType, SubscriptionEvent>> subscriptions;
};

class BrokerEventsTest : public ::testing::Test {
 protected:
  // The broker core as the plugin builds it (BrokerCore::Create), over `broker`, with no
  // configuration file and no client layout (a test starts one: StartVerifying). Without
  // `real_region` the table's records go to sink_; with it, to a real shared region's ring,
  // with a companion supervisor that never started, and none can: its restarts only log (here
  // into the broker's log). The chains as looked for and not found (the configuration
  // decides), unless a test reads them (ChainsAt); no auth decisions of the plugin's own (a
  // test sets its case's). The start's log lines are cleared.
  void Use(FakeBroker broker, PluginOptions options = {}, bool real_region = false) {
    broker_ = std::move(broker);
    options.client_layout = false;
    BrokerCoreSetup setup = TestCoreSetup(&sink_, &slots_, &counters_);
    std::unique_ptr<SharedRegion> region;
    if (real_region) {
      auto created = SharedRegion::Create(SharedRegionSizes{4096, 4096, 8});
      ASSERT_TRUE(created.ok()) << created.status().message();
      region = std::move(created).value();
      setup.companion_path = "/nonexistent/mqc-companion";
      setup.log = [this](LogLevel level, const std::string& text) {
        broker_.log.emplace_back(level, text);
      };
    }
    auto core = BrokerCore::Create(&broker_, std::move(options), std::move(setup),
                                   std::move(region));
    ASSERT_TRUE(core.ok()) << core.status().message();
    core_ = std::move(core).value();
    core_->UseLayout(nullptr);
    // No decisions of the plugin's own: each test sets the ones its case has.
    BrokerSettings& settings = core_->settings();
    settings.decide_basic_auth = false;
    settings.allow_anonymous = false;
    settings.decide_acl = false;
    settings.watch_acl_21 = false;
    core_->calls().basic_auth_chain.Found(nullptr);
    core_->calls().acl_chain.Found(nullptr);
    core_->calls().older_plugins = false;
    broker_.log.clear();
  }

  // The same broker again, over a real shared region (Use).
  void UseRealRegion() {
    FakeBroker broker = std::move(broker_);
    core_.reset();
    Use(std::move(broker), {}, /*real_region=*/true);
  }

  // The broker's chains, read afresh at the next call: FindOwnCallback finds this plugin's
  // node of BASIC_AUTH and ACL_CHECK there (null: not found).
  void ChainsAt(const BrokerCallbackNode* basic_auth, const BrokerCallbackNode* acl) {
    broker_.own_callbacks = {{kEventBasicAuth, basic_auth}, {kEventAclCheck, acl}};
    core_->calls().basic_auth_chain = CallbackChain();
    core_->calls().acl_chain = CallbackChain();
    core_->calls().older_plugins.reset();
  }
  BrokerEvents<FakeBroker> Events() { return BrokerEvents<FakeBroker>(*core_); }

  // A client that connected: authenticated and settled (2.1: confirmed).
  void Connect(FakeClient* client) {
    Events().OnBasicAuth(client->handle());
    if (broker_.api_2_1()) Events().OnConnect21(client->handle());
    core_->connects().Settle();
  }

  // Every access `client` asks for on "events/a" gets `answer` from `handler` (the 2.0 or the 2.1
  // ACL check).
  using AclHandler = int (BrokerEvents<FakeBroker>::*)(const AclCheckEvent&);
  void ExpectEveryAccessAnswered(AclHandler handler, FakeClient* client, int answer) {
    for (int access : {kAclRead, kAclWrite, kAclSubscribe, kAclUnsubscribe}) {
      BrokerEvents<FakeBroker> events = Events();
      EXPECT_EQ((events.*handler)(AclCheck(client, access, "events/a")), answer)
          << "access " << access;
    }
  }

  // A layout verifier for `version`'s candidates, verifying from the next client seen.
  void StartVerifying(const BrokerVersion& version) {
    core_->UseLayout(
        std::make_unique<BrokerLayoutVerifier>(BrokerLayoutCandidates(version), version));
  }

  void Ban(BanKind kind, const std::string& who) {
    BansCommand command;
    mqc::Ban ban;
    ban.kind = kind;
    ban.who = who;
    command.bans.push_back(ban);
    core_->bans().Replace(std::move(command));
  }

  OfflineSink sink_;
  TestStatsSlots slots_ = TestStatsSlots(8);
  BrokerCounters counters_;
  FakeBroker broker_;
  std::unique_ptr<BrokerCore> core_;
};

// ---- auth neutrality ----

TEST_F(BrokerEventsTest, BasicAuthOn21IgnoresWhateverIsConfigured) {
  Use(FakeBroker::Api21());
  FakeClient client = Client("a");
  for (bool decide : {false, true}) {
    for (bool anonymous : {false, true}) {
      core_->settings().decide_basic_auth = decide;
      core_->settings().allow_anonymous = anonymous;
      EXPECT_EQ(Events().OnBasicAuth(client.handle()), kBrokerErrPluginIgnore);
    }
  }
}

TEST_F(BrokerEventsTest, BasicAuthOn20DecidesOnlyWithoutAnotherSourceAsTheBrokerWould) {
  Use(FakeBroker::Api20());
  FakeClient a = Client("a");
  FakeClient b = Client("b");
  FakeClient c = Client("c");
  core_->settings().decide_basic_auth = false;
  EXPECT_EQ(Events().OnBasicAuth(a.handle()), kBrokerErrPluginDefer);
  core_->settings().decide_basic_auth = true;
  core_->settings().allow_anonymous = true;
  EXPECT_EQ(Events().OnBasicAuth(b.handle()), kBrokerSuccess);
  core_->settings().allow_anonymous = false;
  EXPECT_EQ(Events().OnBasicAuth(c.handle()), kBrokerErrAuth);
}

// 2.0 with another plugin configured: what it registers is read from the broker's chains. A
// plugin that only authenticates leaves this plugin alone in the ACL_CHECK chain, where the
// broker without it would allow every check (it has no callback to ask); one that only checks
// ACLs leaves it alone in the BASIC_AUTH chain, where the broker answers by allow_anonymous
// alone, for clients with a username too.
TEST_F(BrokerEventsTest, AChainWithNoOtherCallbackIsAnsweredAsTheBrokerWithoutCallbacks) {
  Use(FakeBroker::Api20(/*acl_check=*/false));
  core_->settings().decide_basic_auth = false;
  core_->settings().decide_acl = false;
  BrokerChain basic_auth;
  BrokerChain acl;
  OtherCallback other;
  const BrokerCallbackNode* own_basic_auth = basic_auth.Append(OtherCallback::Call, nullptr);
  const BrokerCallbackNode* own_acl = acl.Append(OtherCallback::Call, nullptr);
  // An authentication-only plugin after this one.
  BrokerCallbackNode* other_basic_auth = basic_auth.Append(OtherCallback::Call, &other);
  ChainsAt(own_basic_auth, own_acl);
  FakeClient a = Client("a");
  a.facts.username = "user";
  EXPECT_EQ(Events().OnBasicAuth(a.handle()), kBrokerErrPluginDefer);
  core_->connects().Settle();
  ExpectEveryAccessAnswered(&BrokerEvents<FakeBroker>::OnAclCheck, &a, kBrokerSuccess);
  Events().OnAclCheck(AclCheck(&a, kAclSubscribe, "events/b"));
  EXPECT_TRUE(core_->sessions().HoldsSubscription(a.handle(), "events/b"));
  EXPECT_EQ(other.calls, 0);  // the broker asks it, not this plugin
  EXPECT_EQ(broker_.own_callback_lookups, 2);  // once per chain

  // An ACL-only plugin: nothing else answers BASIC_AUTH.
  basic_auth.head()->next = nullptr;
  basic_auth.head()->prev = basic_auth.head();
  static_cast<void>(other_basic_auth);
  for (const bool anonymous : {true, false}) {
    core_->settings().allow_anonymous = anonymous;
    FakeClient b = Client(anonymous ? "b1" : "b2");
    b.facts.username = "user";
    EXPECT_EQ(Events().OnBasicAuth(b.handle()), anonymous ? kBrokerSuccess : kBrokerErrAuth);
  }
}

// With other ACL callbacks in the chain the plugin asks those after its own itself, once each,
// and answers with the first answer that is not DEFER, or the broker's denial when every one
// defers: what it records is what the broker decided.
TEST_F(BrokerEventsTest, AnAclChainWithOtherCallbacksIsAskedOnceAndItsAnswerRecorded) {
  Use(FakeBroker::Api20(/*acl_check=*/false));
  core_->settings().decide_acl = false;
  BrokerChain acl;
  OtherCallback acl_plugin;
  acl_plugin.answer_for = [](const void* event_data) {
    const std::string topic = static_cast<const AclCheckEvent*>(event_data)->topic;
    if (topic.rfind("ok/", 0) == 0) return kBrokerSuccess;
    if (topic.rfind("deny/", 0) == 0) return kBrokerErrAclDenied;
    return kBrokerErrPluginDefer;
  };
  const BrokerCallbackNode* own_acl = acl.Append(OtherCallback::Call, nullptr);
  acl.Append(OtherCallback::Call, &acl_plugin);
  ChainsAt(nullptr, own_acl);
  FakeClient a = Client("a");
  Connect(&a);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&a, kAclSubscribe, "ok/#")), kBrokerSuccess);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&a, kAclSubscribe, "deny/#")), kBrokerErrAclDenied);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&a, kAclSubscribe, "other/#")), kBrokerErrAclDenied);
  EXPECT_EQ(acl_plugin.calls, 3);
  EXPECT_TRUE(core_->sessions().HoldsSubscription(a.handle(), "ok/#"));
  EXPECT_FALSE(core_->sessions().HoldsSubscription(a.handle(), "deny/#"));
  EXPECT_FALSE(core_->sessions().HoldsSubscription(a.handle(), "other/#"));
  // A publish is asked too, for its denial (counted at MESSAGE once allowed): the broker asks
  // none of the others again.
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&a, kAclWrite, "ok/x")), kBrokerSuccess);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&a, kAclWrite, "deny/x")), kBrokerErrAclDenied);
  EXPECT_EQ(acl_plugin.calls, 5);
  EXPECT_EQ(counters_.acl_denials[static_cast<int>(AclAccess::kPublish)].load(), 1u);
  EXPECT_EQ(counters_.acl_denials[static_cast<int>(AclAccess::kSubscribe)].load(), 2u);
}

// Where a plugin of the older interface is in scope (the broker asks it after every callback),
// or the chain cannot be found, the configuration decides, as before the chains were read; a
// chain not found is said once in the log.
TEST_F(BrokerEventsTest, AnOlderPluginOrAnUnfoundChainLeavesTheConfigurationToDecide) {
  Use(FakeBroker::Api20(/*acl_check=*/false));
  core_->settings().decide_basic_auth = false;
  core_->settings().decide_acl = false;
  BrokerChain basic_auth;
  BrokerChain acl;
  const BrokerCallbackNode* own_basic_auth = basic_auth.Append(OtherCallback::Call, nullptr);
  const BrokerCallbackNode* own_acl = acl.Append(OtherCallback::Call, nullptr);
  ChainsAt(own_basic_auth, own_acl);
  broker_.older_plugin = true;
  FakeClient a = Client("a");
  a.facts.username = "user";
  EXPECT_EQ(Events().OnBasicAuth(a.handle()), kBrokerErrPluginDefer);
  core_->connects().Settle();
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&a, kAclSubscribe, "events/a")),
            kBrokerErrPluginDefer);
  ASSERT_EQ(broker_.log.size(), 2u);
  EXPECT_NE(broker_.log[0].second.find("older interface"), std::string::npos);

  broker_.older_plugin = false;
  ChainsAt(nullptr, nullptr);
  broker_.log.clear();
  FakeClient b = Client("b");
  EXPECT_EQ(Events().OnBasicAuth(b.handle()), kBrokerErrPluginDefer);
  EXPECT_EQ(Events().OnBasicAuth(Client("c").handle()), kBrokerErrPluginDefer);
  ASSERT_EQ(broker_.log.size(), 1u);
  EXPECT_EQ(broker_.log[0].first, LogLevel::kWarning);
  EXPECT_NE(broker_.log[0].second.find("cannot read the broker's BASIC_AUTH callbacks"),
            std::string::npos);
}

TEST_F(BrokerEventsTest, EnhancedAuthStartIsNeutralOnBoth) {
  Use(FakeBroker::Api20());
  FakeClient a = Client("a", 5);
  EXPECT_EQ(Events().OnExtAuthStart(a.handle(), "SCRAM"), kBrokerErrPluginDefer);
  Use(FakeBroker::Api21());
  FakeClient b = Client("b", 5);
  EXPECT_EQ(Events().OnExtAuthStart(b.handle(), "SCRAM"), kBrokerErrPluginIgnore);
}

// The pure answers the handlers give, for every case.
TEST(BrokerAnswersTest, NeutralBasicAuthAnswer) {
  EXPECT_EQ(NeutralBasicAuthAnswer(true, true, false), kBrokerErrPluginIgnore);
  EXPECT_EQ(NeutralBasicAuthAnswer(false, false, false), kBrokerErrPluginDefer);
  EXPECT_EQ(NeutralBasicAuthAnswer(false, true, true), kBrokerSuccess);
  EXPECT_EQ(NeutralBasicAuthAnswer(false, true, false), kBrokerErrAuth);
}

// ---- bans ----

TEST_F(BrokerEventsTest, ABanRefusesWithBannedOn21AndNotAuthorizedOn20) {
  Use(FakeBroker::Api21());
  Ban(BanKind::kClientId, "bad");
  FakeClient bad = Client("bad");
  FakeClient good = Client("good");
  EXPECT_EQ(Events().OnBasicAuth(bad.handle()), kBrokerErrBanned);
  EXPECT_EQ(Events().OnBasicAuth(good.handle()), kBrokerErrPluginIgnore);

  Use(FakeBroker::Api20());
  Ban(BanKind::kClientId, "bad");
  core_->settings().decide_basic_auth = true;
  core_->settings().allow_anonymous = true;
  EXPECT_EQ(Events().OnBasicAuth(bad.handle()), kBrokerErrAuth);
  EXPECT_EQ(counters_.connects_banned.load(), 2u);
}

TEST_F(BrokerEventsTest, ABanInEnhancedAuthenticationIsNotAuthorizedOnBoth) {
  Use(FakeBroker::Api21());
  Ban(BanKind::kUsername, "mallory");
  FakeClient client = Client("x", 5);
  client.facts.username = "mallory";
  EXPECT_EQ(Events().OnExtAuthStart(client.handle(), "SCRAM"), kBrokerErrAuth);
  EXPECT_EQ(BanRefusalCode(false, true), kBrokerErrAuth);
  EXPECT_EQ(BanRefusalCode(false, false), kBrokerErrAuth);
  EXPECT_EQ(BanRefusalCode(true, false), kBrokerErrBanned);
}

// A reload re-checks the clients the broker holds: no new CONNECT, and no ban refuses them.
TEST_F(BrokerEventsTest, AReloadsRecheckKeepsTheConnectionAndAnswersAsTheBroker) {
  Use(FakeBroker::Api20());
  core_->settings().decide_basic_auth = true;
  core_->settings().allow_anonymous = false;
  FakeClient client = Client("a");
  Connect(&client);
  ASSERT_EQ(counters_.connects.load(), 1u);
  Ban(BanKind::kClientId, "a");
  core_->connects().BeginReload();
  EXPECT_EQ(Events().OnBasicAuth(client.handle()), kBrokerErrAuth);  // the broker's own answer
  core_->connects().Settle();
  EXPECT_EQ(core_->sessions().open_count(), 1u);
  EXPECT_EQ(counters_.connects.load(), 1u);
  EXPECT_EQ(counters_.connects_banned.load(), 0u);
}

// ---- ACL checks ----

// A resumed session's queued messages are re-checked (READ) and its unfinished QoS 2 publishes
// too (WRITE) while its CONNECT is being handled: counted when first queued, not again.
TEST_F(BrokerEventsTest, AResumedSessionsRechecksCountNothing) {
  Use(FakeBroker::Api20());
  core_->settings().decide_acl = true;
  FakeClient client = Client("a");
  EXPECT_EQ(Events().OnBasicAuth(client.handle()), kBrokerErrPluginDefer);
  ASSERT_TRUE(core_->connects().IsPending(client.handle()));
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclWrite, "events/a", 2)), kBrokerSuccess);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclRead, "events/a", 1)), kBrokerSuccess);
  EXPECT_TRUE(core_->connects().IsPending(client.handle()));  // the CONNECT is not settled
  EXPECT_EQ(counters_.delivered_messages.load(), 0u);
  // Once settled, a delivery counts.
  core_->connects().Settle();
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclRead, "events/a", 1)), kBrokerSuccess);
  EXPECT_EQ(counters_.delivered_messages.load(), 1u);
}

// 2.0 with another ACL source and mosquitto_acl_check: the later sources are asked once, in a
// nested call where this plugin defers, and their answer is the plugin's.
TEST_F(BrokerEventsTest, TheLaterAclSourcesAnswerThroughTheNestedCheck) {
  Use(FakeBroker::Api20(/*acl_check=*/true));
  core_->settings().decide_acl = false;
  FakeClient client = Client("a");
  Connect(&client);
  std::vector<int> nested_answers;
  broker_.inside_later_acl = [&](const AclCheckEvent& check) {
    EXPECT_TRUE(core_->calls().acl_check_nested);
    nested_answers.push_back(Events().OnAclCheck(check));
  };
  broker_.later_acl_answer = kBrokerErrAclDenied;
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclRead, "events/a")), kBrokerErrAclDenied);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclSubscribe, "events/#")), kBrokerErrAclDenied);
  EXPECT_FALSE(core_->sessions().HoldsSubscription(client.handle(), "events/#"));
  broker_.later_acl_answer = kBrokerSuccess;
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclRead, "events/a")), kBrokerSuccess);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclSubscribe, "events/#")), kBrokerSuccess);
  EXPECT_TRUE(core_->sessions().HoldsSubscription(client.handle(), "events/#"));
  EXPECT_FALSE(core_->calls().acl_check_nested);

  EXPECT_EQ(broker_.later_acl_checks.size(), 4u);
  EXPECT_EQ(nested_answers, std::vector<int>(4, kBrokerErrPluginDefer));
  EXPECT_EQ(counters_.delivered_messages.load(), 1u);  // the denied delivery is not counted
  // A publish (WRITE) is asked too, for its denial; it is counted at MESSAGE.
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclWrite, "events/a")), kBrokerSuccess);
  EXPECT_EQ(broker_.later_acl_checks.size(), 5u);
  EXPECT_EQ(counters_.received_messages.load(), 0u);
}

// ---- ACL denials (docs/api.md, "Denials") ----

// The denials of a connection's slot, as the companion reads them.
Denials DenialsOf(BrokerCore& core, FakeClient* client) {
  Denials denials;
  ConnectionStatsSlot* slot = core.sessions().View(client->handle()).stats;
  if (slot != nullptr) {
    ReadDenials(*slot, core.sessions().Rare(*slot), slot->seq.load(), &denials);
  }
  return denials;
}

// 2.0 with another ACL source asked through the nested check: a PUBLISH and a SUBSCRIBE filter
// it refuses are the client's denials and the broker's totals; a refused delivery (READ) is a
// message not delivered, no request of the client's; an allowed one is no denial.
TEST_F(BrokerEventsTest, A20DenialOfAPublishOrSubscribeIsCountedWithItsTopicAndTime) {
  Use(FakeBroker::Api20(/*acl_check=*/true));
  core_->settings().decide_acl = false;
  core_->SetDenialsShown();
  FakeClient client = Client("a");
  Connect(&client);
  broker_.now_ns = 1'800'000'000'000'000'000;
  EXPECT_EQ(DenialsOf(*core_, &client).shown, true);
  EXPECT_EQ(DenialsOf(*core_, &client).publish, 0u);

  broker_.later_acl_answer = kBrokerErrAclDenied;
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclWrite, "secret/a")), kBrokerErrAclDenied);
  broker_.now_ns += 5;
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclSubscribe, "secret/#")), kBrokerErrAclDenied);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclRead, "secret/b")), kBrokerErrAclDenied);
  Denials denials = DenialsOf(*core_, &client);
  EXPECT_EQ(denials.publish, 1u);
  EXPECT_EQ(denials.subscribe, 1u);
  EXPECT_EQ(denials.last_topic, "secret/#");
  EXPECT_EQ(denials.last_ns, broker_.now_ns);
  EXPECT_EQ(counters_.acl_denials[static_cast<int>(AclAccess::kPublish)].load(), 1u);
  EXPECT_EQ(counters_.acl_denials[static_cast<int>(AclAccess::kSubscribe)].load(), 1u);

  broker_.later_acl_answer = kBrokerSuccess;
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclWrite, "open/a")), kBrokerSuccess);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclSubscribe, "open/#")), kBrokerSuccess);
  denials = DenialsOf(*core_, &client);
  EXPECT_EQ(denials.publish + denials.subscribe, 2u);
  EXPECT_EQ(denials.last_topic, "secret/#");
}

// A topic longer than a slot keeps is cut at kDeniedTopicMax bytes; the count stays exact.
TEST_F(BrokerEventsTest, ALongDeniedTopicIsCutAtTheSlotsField) {
  Use(FakeBroker::Api20(/*acl_check=*/true));
  core_->settings().decide_acl = false;
  core_->SetDenialsShown();
  FakeClient client = Client("a");
  Connect(&client);
  broker_.later_acl_answer = kBrokerErrAclDenied;
  const std::string topic = "t/" + std::string(200, 'x');
  Events().OnAclCheck(AclCheck(&client, kAclWrite, topic.c_str()));
  const Denials denials = DenialsOf(*core_, &client);
  EXPECT_EQ(denials.publish, 1u);
  EXPECT_EQ(denials.last_topic, topic.substr(0, kDeniedTopicMax));
}

// A kick re-checks a persistent client's subscriptions right before its DISCONNECT
// (check_subscription_acls, 2.0.12 on): a re-check the other source denies is no request of the
// client's, and not counted; the same denial followed by anything else was the client's own
// SUBSCRIBE renewing the filter, and is.
TEST_F(BrokerEventsTest, ADeniedReCheckOfAKickIsNoDenialButADeniedRenewalIs) {
  Use(FakeBroker::Api20(/*acl_check=*/true));
  core_->settings().decide_acl = false;
  core_->SetDenialsShown();
  FakeClient kicked = Client("kicked");
  FakeClient renewing = Client("renewing");
  Connect(&kicked);
  Connect(&renewing);
  broker_.later_acl_answer = kBrokerSuccess;
  Events().OnAclCheck(AclCheck(&kicked, kAclSubscribe, "held/#"));
  Events().OnAclCheck(AclCheck(&renewing, kAclSubscribe, "held/#"));
  broker_.later_acl_answer = kBrokerErrAclDenied;

  Events().OnAclCheck(AclCheck(&renewing, kAclSubscribe, "held/#"));
  EXPECT_EQ(DenialsOf(*core_, &renewing).subscribe, 0u);  // held until the next event tells
  Events().OnTick();
  EXPECT_EQ(DenialsOf(*core_, &renewing).subscribe, 1u);
  EXPECT_EQ(DenialsOf(*core_, &renewing).last_topic, "held/#");
  EXPECT_TRUE(core_->sessions().HoldsSubscription(renewing.handle(), "held/#"));

  Events().OnAclCheck(AclCheck(&kicked, kAclSubscribe, "held/#"));
  Events().OnDisconnect(kicked.handle(), -1);
  EXPECT_EQ(counters_.acl_denials[static_cast<int>(AclAccess::kSubscribe)].load(), 1u);
}

// Without the nested check or the chain, the plugin works a PUBLISH's denial out from the
// acl_file it reads (the broker asks the file itself: the plugin defers).
TEST_F(BrokerEventsTest, WithoutTheNestedCheckAPublishTheAclFileRefusesIsADenial) {
  Use(FakeBroker::Api20(/*acl_check=*/false));
  core_->settings().decide_acl = false;
  core_->settings().acl_file = std::make_unique<AclFile>();
  ASSERT_TRUE(
      AclFile::Parse("topic readwrite open/#\n", "acl", core_->settings().acl_file.get()).ok());
  core_->SetDenialsShown();
  FakeClient client = Client("a");
  Connect(&client);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclWrite, "open/a")), kBrokerErrPluginDefer);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclWrite, "closed/a")), kBrokerErrPluginDefer);
  const Denials denials = DenialsOf(*core_, &client);
  EXPECT_TRUE(denials.shown);
  EXPECT_EQ(denials.publish, 1u);
  EXPECT_EQ(denials.last_topic, "closed/a");
}

// Where a denial cannot reach the plugin the slots say so, and the start line too: 2.1 with
// another ACL source (no event for a refused request, and no ACL_CHECK of the plugin's), 2.0
// with an ACL source it cannot ask.
TEST_F(BrokerEventsTest, DenialsAreShownOnlyWhereEveryDenialReachesThePlugin) {
  struct Case {
    FakeBroker broker;
    bool decide_acl;
    bool watch_acl_21;
    bool shown;
  };
  Case cases[] = {
      {FakeBroker::Api20(/*acl_check=*/true), false, false, true},
      {FakeBroker::Api20(/*acl_check=*/false), true, false, true},
      {FakeBroker::Api21(), true, true, true},
      {FakeBroker::Api21(), false, false, false},
  };
  for (Case& c : cases) {
    Use(std::move(c.broker));
    core_->settings().decide_acl = c.decide_acl;
    core_->settings().watch_acl_21 = c.watch_acl_21;
    core_->SetDenialsShown();
    EXPECT_EQ(DenialsShown(*core_), c.shown);
    FakeClient client = Client("a");
    Connect(&client);
    EXPECT_EQ(DenialsOf(*core_, &client).shown, c.shown);
  }
}

// 2.0 without mosquitto_acl_check: the acl_file's answer is worked out from the file; the
// broker asks it itself, so the plugin defers, and counts only what the file allows.
TEST_F(BrokerEventsTest, WithoutTheNestedCheckTheAclFileDecidesWhatIsCounted) {
  Use(FakeBroker::Api20(/*acl_check=*/false));
  core_->settings().decide_acl = false;
  core_->settings().acl_file = std::make_unique<AclFile>();
  ASSERT_TRUE(AclFile::Parse("topic read events/open\n", "acl", core_->settings().acl_file.get()).ok());
  FakeClient client = Client("a");
  Connect(&client);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclRead, "events/open")), kBrokerErrPluginDefer);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&client, kAclRead, "events/closed")),
            kBrokerErrPluginDefer);
  EXPECT_EQ(counters_.delivered_messages.load(), 1u);
  EXPECT_TRUE(broker_.later_acl_checks.empty());
}

// The plugin decides ACLs (no other source on 2.0): it allows everything, as the broker.
TEST_F(BrokerEventsTest, WithoutAnotherAclSourceEveryCheckIsAllowed) {
  Use(FakeBroker::Api20());
  core_->settings().decide_acl = true;
  FakeClient client = Client("a");
  Connect(&client);
  ExpectEveryAccessAnswered(&BrokerEvents<FakeBroker>::OnAclCheck, &client, kBrokerSuccess);
  EXPECT_TRUE(broker_.later_acl_checks.empty());
}

// 2.1's ACL_CHECK only watches: IGNORE for every access, a SUBSCRIBE included.
TEST_F(BrokerEventsTest, AclCheckOn21IgnoresEveryCheck) {
  Use(FakeBroker::Api21());
  core_->settings().watch_acl_21 = true;
  FakeClient client = Client("a");
  Connect(&client);
  ExpectEveryAccessAnswered(&BrokerEvents<FakeBroker>::OnAclCheck21, &client,
                            kBrokerErrPluginIgnore);
  EXPECT_FALSE(core_->sessions().HoldsSubscription(client.handle(), "events/a"));
}

// ---- what is registered, what is logged at start ----

TEST_F(BrokerEventsTest, The20PluginRegistersForEveryAclCheck) {
  using K = BrokerEventKind;
  Use(FakeBroker::Api20());
  EXPECT_EQ(WantedEvents(*core_),
            (std::vector<K>{K::kBasicAuth, K::kExtAuthStart, K::kAclCheck, K::kMessageIn,
                            K::kDisconnect, K::kTick, K::kReload}));
}

// 2.1's ACL_CHECK from the start only for strict mode; where the plugin only watches it (no
// other ACL source) the offline watch registers it while sessions are kept (the next test).
TEST_F(BrokerEventsTest, The21PluginRegistersForAclChecksAtTheStartOnlyInStrictMode) {
  using K = BrokerEventKind;
  Use(FakeBroker::Api21());
  const std::vector<K> reported = {K::kBasicAuth,  K::kExtAuthStart, K::kConnect,
                                   K::kSubscribe,  K::kUnsubscribe,  K::kMessageIn,
                                   K::kMessageOut, K::kDisconnect,   K::kClientOffline,
                                   K::kTick,       K::kReload};
  EXPECT_EQ(WantedEvents(*core_), reported);
  core_->settings().watch_acl_21 = true;
  EXPECT_EQ(WantedEvents(*core_), reported);
  std::vector<K> with_acl = reported;
  with_acl.insert(with_acl.begin() + 7, K::kAclCheck);
  core_->settings().watch_acl_21 = false;
  core_->settings().options.kubemq_strict = true;
  EXPECT_EQ(WantedEvents(*core_), with_acl);
}

// 2.1 where the plugin only watches ACL checks: its ACL_CHECK is registered from inside the
// CLIENT_OFFLINE that keeps the first session, before the broker routes another message, so a
// QoS 0 message the broker throws away for it is counted; given back a minute after the last
// session left, at TICK. Strict mode (registered from the start) and another ACL source leave
// it alone.
TEST_F(BrokerEventsTest, On21TheWatchedAclCheckIsRegisteredWhileASessionIsKeptOffline) {
  Use(FakeBroker::Api21());
  ASSERT_NO_FATAL_FAILURE(UseRealRegion());
  core_->settings().watch_acl_21 = true;
  core_->StartOfflineWatch();
  FakeClient session = Client("s", 5);
  session.facts.clean_session = false;
  Connect(&session);
  Events().OnSubscribe21(session.handle(), true, "events/a", 1);
  EXPECT_TRUE(broker_.acl_watch_calls.empty());
  Events().OnDisconnect(session.handle(), 0, DisconnectEvent::kClientOffline);
  EXPECT_TRUE(broker_.acl_watched);
  session.socket = -1;
  EXPECT_EQ(Events().OnAclCheck21(AclCheck(&session, kAclRead, "events/a", 0)),
            kBrokerErrPluginIgnore);
  const auto offline = static_cast<std::size_t>(DropReason::kOffline);
  EXPECT_EQ(core_->region()->header()->counters.messages_dropped[offline].load(), 1u);

  // The session resumes; the watch stays for a minute of TICKs without one, then goes.
  FakeClient resumed = Client("s", 5);
  resumed.facts.clean_session = false;
  Connect(&resumed);
  ASSERT_EQ(core_->sessions().offline_count(), 0u);
  constexpr std::int64_t kSecondNs = 1000000000;
  const std::int64_t start = broker_.monotonic_ns;
  for (std::int64_t at = start; at <= start + OfflineWatch::kReleaseAfterNs; at += kSecondNs) {
    broker_.monotonic_ns = at;
    Events().OnTick();
    ASSERT_TRUE(broker_.acl_watched) << (at - start) / kSecondNs << " s";
  }
  broker_.monotonic_ns += kSecondNs;
  Events().OnTick();
  EXPECT_FALSE(broker_.acl_watched);
  EXPECT_EQ(broker_.acl_watch_calls, (std::vector<bool>{true, false}));

  // Strict mode (ACL_CHECK registered from the start), or another ACL source: no watch.
  const std::vector<std::pair<bool, bool>> unwatched = {
      {true, true}, {false, true}, {false, false}};
  for (const auto& [watch_acl_21, strict] : unwatched) {
    core_.reset();
    Use(FakeBroker::Api21(), {}, /*real_region=*/true);
    core_->settings().watch_acl_21 = watch_acl_21;
    core_->settings().options.kubemq_strict = strict;
    core_->StartOfflineWatch();
    FakeClient kept = Client("k", 5);
    kept.facts.clean_session = false;
    Connect(&kept);
    Events().OnDisconnect(kept.handle(), 0, DisconnectEvent::kClientOffline);
    ASSERT_EQ(core_->sessions().offline_count(), 1u);
    EXPECT_TRUE(broker_.acl_watch_calls.empty()) << watch_acl_21 << strict;
  }
}

// Only 2.0 without mosquitto_acl_check, with an ACL source the plugin neither is nor reads, has
// deliveries it cannot tell apart from denials.
TEST_F(BrokerEventsTest, AnUnreadAclSourceIsOnly20sWithoutTheNestedCheck) {
  Use(FakeBroker::Api20(/*acl_check=*/false));
  // Unread only where the broker's chain cannot be read either (callback_chain.h).
  EXPECT_EQ(UnreadAclSource(*core_), !kCanReadCallbackChains);
  core_->settings().acl_file = std::make_unique<AclFile>();
  EXPECT_FALSE(UnreadAclSource(*core_));
  core_->settings().acl_file.reset();
  core_->settings().decide_acl = true;
  EXPECT_FALSE(UnreadAclSource(*core_));
  Use(FakeBroker::Api20(/*acl_check=*/true));
  core_->settings().decide_acl = false;
  EXPECT_FALSE(UnreadAclSource(*core_));
  Use(FakeBroker::Api21());
  EXPECT_FALSE(UnreadAclSource(*core_));
}

// Presence: nothing without an option; with one, a connection's open and close are published
// through the broker, and one log line says on which topics.
TEST_F(BrokerEventsTest, PresenceIsSetUpOnlyWhenAskedAndPublishesThroughTheBroker) {
  Use(FakeBroker::Api20());
  EXPECT_EQ(core_->presence(), nullptr);

  PluginOptions options;
  options.presence_events = true;
  options.presence_node = "node1";
  FakeBroker broker = FakeBroker::Api20();
  BrokerCoreSetup setup;
  setup.sink = &sink_;
  auto core = BrokerCore::Create(&broker, options, std::move(setup), nullptr);
  ASSERT_TRUE(core.ok()) << core.status().message();
  ASSERT_NE((*core)->presence(), nullptr);
  const auto presence_line = std::find_if(broker.log.begin(), broker.log.end(), [](const auto& line) {
    return line.second.find("presence messages") != std::string::npos;
  });
  ASSERT_NE(presence_line, broker.log.end());
  EXPECT_EQ(presence_line->second,
            "mosquitto_connections: presence messages on $SYS/brokers/node1/clients/<client "
            "id>/connected, disconnected");
  EXPECT_EQ(std::count_if(broker.log.begin(), broker.log.end(), [](const auto& line) {
              return line.second.find("presence messages") != std::string::npos;
            }), 1);
  Use(std::move(broker), options);
  FakeClient client = Client("a");
  Connect(&client);
  Events().OnDisconnect(client.handle(), -1);
  EXPECT_EQ(broker_.published,
            (std::vector<std::string>{"$SYS/brokers/node1/clients/a/connected",
                                      "$SYS/brokers/node1/clients/a/disconnected"}));
}

// ---- strict mode ----

// Strict mode refuses a SUBSCRIBE KubeMQ would refuse, on 2.1 through its ACL_CHECK (IGNORE for
// everything else), and counts it as an error of mosquitto_connections_subscribes_total.
TEST_F(BrokerEventsTest, StrictModeOn21RefusesWhatKubemqWouldAndIgnoresTheRest) {
  Use(FakeBroker::Api21());
  core_->settings().options.kubemq_strict = true;
  FakeClient client = Client("a");
  Connect(&client);
  EXPECT_EQ(Events().OnAclCheck21(AclCheck(&client, kAclSubscribe, "store/#")),
            kBrokerErrAclDenied);
  EXPECT_EQ(Events().OnAclCheck21(AclCheck(&client, kAclSubscribe, "commands/svc")),
            kBrokerErrAclDenied);
  EXPECT_EQ(Events().OnAclCheck21(AclCheck(&client, kAclSubscribe, "events/#")),
            kBrokerErrPluginIgnore);
  EXPECT_EQ(Events().OnAclCheck21(AclCheck(&client, kAclWrite, "store/#")), kBrokerErrPluginIgnore);
  EXPECT_EQ(counters_.subscribes[static_cast<int>(SubscribeStatus::kError)].load(), 2u);
  // Without strict mode, the same filter is the broker's to decide.
  core_->settings().options.kubemq_strict = false;
  EXPECT_EQ(Events().OnAclCheck21(AclCheck(&client, kAclSubscribe, "store/#")),
            kBrokerErrPluginIgnore);
}

// A filter the client already holds is a renewal (or a kick's re-check): strict mode, turned on
// by a reload after the subscription was made, does not refuse it; on 2.0 the nested check asks
// the later ACL sources first for a filter it accepts.
TEST_F(BrokerEventsTest, StrictModeNeverRefusesAFilterTheClientHolds) {
  Use(FakeBroker::Api21());
  FakeClient client = Client("a");
  Connect(&client);
  Events().OnSubscribe21(client.handle(), true, "store/#", 0);
  core_->settings().options.kubemq_strict = true;
  EXPECT_EQ(Events().OnAclCheck21(AclCheck(&client, kAclSubscribe, "store/#")),
            kBrokerErrPluginIgnore);

  Use(FakeBroker::Api20());
  core_->settings().options.kubemq_strict = true;
  core_->settings().decide_acl = true;
  FakeClient other = Client("b");
  Connect(&other);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&other, kAclSubscribe, "queries/svc/+")),
            kBrokerErrAclDenied);
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&other, kAclSubscribe, "events/a", 1)), kBrokerSuccess);
  EXPECT_TRUE(core_->sessions().HoldsSubscription(other.handle(), "events/a"));
  EXPECT_FALSE(core_->sessions().HoldsSubscription(other.handle(), "queries/svc/+"));
}

// ---- 2.1's own events: CONNECT, SUBSCRIBE and UNSUBSCRIBE ----

// A client whose authentication the plugin never saw (a use_identity_as_username listener skips
// BASIC_AUTH) is listed from 2.1's CONNECT on; one already open is not listed twice.
TEST_F(BrokerEventsTest, On21AConnectNotSeenAuthenticatingIsListedOnce) {
  Use(FakeBroker::Api21());
  FakeClient client = Client("cert-user");
  EXPECT_EQ(Events().OnConnect21(client.handle()), kBrokerSuccess);
  EXPECT_TRUE(core_->sessions().IsOpen(client.handle()));
  EXPECT_EQ(Events().OnConnect21(client.handle()), kBrokerSuccess);
  ASSERT_EQ(sink_.connections.size(), 1u);
  EXPECT_EQ(sink_.connections[0].client_id, "cert-user");
  EXPECT_EQ(counters_.connects.load(), 1u);
}

// BASIC_AUTH begins the CONNECT; 2.1's CONNECT confirms it, and the connection is open at once
// (no later callback is needed to settle it).
TEST_F(BrokerEventsTest, On21ConnectConfirmsTheConnectBasicAuthBegan) {
  Use(FakeBroker::Api21());
  FakeClient client = Client("a");
  Events().OnBasicAuth(client.handle());
  EXPECT_TRUE(core_->connects().IsPending(client.handle()));
  EXPECT_TRUE(sink_.connections.empty());
  Events().OnConnect21(client.handle());
  EXPECT_FALSE(core_->connects().IsPending(client.handle()));
  EXPECT_TRUE(core_->sessions().IsOpen(client.handle()));
  EXPECT_EQ(sink_.connections.size(), 1u);
}

// 2.1 reports a subscription once made, with the granted QoS, and its removal: the table
// follows; the same filter at the same QoS again is a renewal (no event); an event without a
// filter changes nothing.
TEST_F(BrokerEventsTest, On21SubscriptionsFollowWhatTheBrokerMade) {
  Use(FakeBroker::Api21());
  FakeClient client = Client("a");
  Connect(&client);
  const void* handle = client.handle();
  EXPECT_EQ(Events().OnSubscribe21(client.handle(), true, "events/a/#", 1), kBrokerSuccess);
  EXPECT_TRUE(core_->sessions().HoldsSubscription(handle, "events/a/#"));
  Events().OnSubscribe21(client.handle(), true, "events/a/#", 1);
  Events().OnSubscribe21(client.handle(), true, "events/a/#", 2);
  Events().OnSubscribe21(client.handle(), true, nullptr, 0);
  Events().OnSubscribe21(client.handle(), false, "events/a/#", 0);
  EXPECT_FALSE(core_->sessions().HoldsSubscription(handle, "events/a/#"));
  ASSERT_EQ(sink_.subscriptions.size(), 3u);
  EXPECT_EQ(sink_.subscriptions[0].first, EventType::kSubscribe);
  EXPECT_EQ(sink_.subscriptions[0].second.filter, "events/a/#");
  EXPECT_EQ(sink_.subscriptions[0].second.qos, 1);
  EXPECT_EQ(sink_.subscriptions[1].first, EventType::kSubscribe);
  EXPECT_EQ(sink_.subscriptions[1].second.qos, 2);
  EXPECT_EQ(sink_.subscriptions[2].first, EventType::kUnsubscribe);
  EXPECT_EQ(sink_.subscriptions[2].second.filter, "events/a/#");
  EXPECT_EQ(sink_.subscriptions[0].second.seq, sink_.connections.at(0).seq);
}

// ---- DISCONNECT's reason ----

// 2.1 passes the reason of a connection's end; 2.0 passes none, and the client's state tells
// (broker_capabilities.h maps both). The time since the client last sent data is kept.
TEST_F(BrokerEventsTest, TheCloseReasonIsWhatTheBrokerTells) {
  struct Case {
    bool api_2_1;
    int reason_or_state;
    CloseReason expected;
  };
  const Case cases[] = {
      {true, 0, CloseReason::kClientDisconnect},  {true, 142, CloseReason::kSessionTakenOver},
      {true, 11, CloseReason::kAccessRevoked},    {true, 7, CloseReason::kConnectionLost},
      {false, 2, CloseReason::kClientDisconnect}, {false, 17, CloseReason::kSessionTakenOver},
      {false, 5, CloseReason::kConnectionLost},   {false, -1, CloseReason::kUnspecified},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.api_2_1 ? "2.1 reason " : "2.0 state ") +
                 std::to_string(c.reason_or_state));
    sink_.closes.clear();
    Use(c.api_2_1 ? FakeBroker::Api21() : FakeBroker::Api20());
    FakeClient client = Client("a");
    Connect(&client);
    client.idle_ms = 250;
    if (!c.api_2_1) client.state = c.reason_or_state;
    Events().OnDisconnect(client.handle(), c.api_2_1 ? c.reason_or_state : -1);
    ASSERT_EQ(sink_.closes.size(), 1u);
    EXPECT_EQ(sink_.closes[0].reason, c.expected);
    EXPECT_EQ(sink_.closes[0].idle_ns, 250000000);
    EXPECT_EQ(counters_.disconnects[static_cast<int>(c.expected)].load(), 1u);
    counters_.disconnects[static_cast<int>(c.expected)].store(0);
  }
}

// ---- kicks ----

TEST_F(BrokerEventsTest, AKicksDisconnectClosesAsKickedAndIsLogged) {
  Use(FakeBroker::Api20());
  FakeClient client = Client("a");
  Connect(&client);
  broker_.kick_answer = kBrokerSuccess;
  KickCommand command;
  command.client_id = "a\nforged";
  command.caller = "127.0.0.1:4000";
  Events().Kick(command);
  ASSERT_EQ(broker_.kicked, std::vector<std::string>{"a\nforged"});
  EXPECT_EQ(broker_.kicked_with_will, std::vector<bool>{true});
  ASSERT_EQ(broker_.log.size(), 1u);
  EXPECT_EQ(broker_.log[0].first, LogLevel::kNotice);
  EXPECT_EQ(broker_.log[0].second,
            "mosquitto_connections: disconnected client 'a?forged' at the request of "
            "127.0.0.1:4000 (no token)");
  broker_.kick_answer = 3;
  Events().Kick(command);
  EXPECT_EQ(broker_.log.back().first, LogLevel::kWarning);
  EXPECT_NE(broker_.log.back().second.find("cannot disconnect"), std::string::npos);
  EXPECT_FALSE(core_->calls().kicking);
  broker_.kick_answer = kBrokerSuccess;
  command.with_will = false;  // an admin's preventWill reaches the broker's kick
  Events().Kick(command);
  EXPECT_EQ(broker_.kicked_with_will.back(), false);
  EXPECT_NE(broker_.log.back().second.find(", without publishing its will"), std::string::npos);
}

TEST_F(BrokerEventsTest, TheDisconnectInsideAKickClosesAsKicked) {
  Use(FakeBroker::Api20());
  FakeClient client = Client("a");
  FakeClient other = Client("b");
  Connect(&client);
  Connect(&other);
  broker_.inside_kick = [&](const std::string&) {
    EXPECT_EQ(Events().OnDisconnect(client.handle(), -1), kBrokerSuccess);
  };
  KickCommand command;
  command.client_id = "a";
  Events().Kick(command);
  EXPECT_EQ(Events().OnDisconnect(other.handle(), -1), kBrokerSuccess);  // not a kick
  EXPECT_EQ(counters_.disconnects[static_cast<int>(CloseReason::kKicked)].load(), 1u);
  EXPECT_EQ(core_->sessions().open_count(), 0u);
}

// ---- the client layout ----

// The layout verifier (broker_layout.h) is fed at CONNECT, SUBSCRIBE and UNSUBSCRIBE, never by a
// delivery or a publish. A client whose allocation is too small for every candidate makes the
// first observation decide (unknown), which shows where it happened.
TEST_F(BrokerEventsTest, TheLayoutIsFedAtConnectAndSubscriptionsNeverPerMessage) {
  BrokerVersion version;
  version.major = 2;
  version.minor = 0;
  version.patch = 21;
  for (int access : {kAclSubscribe, kAclUnsubscribe}) {
    Use(FakeBroker::Api20());
    FakeClient client = Client("a");
    client.memory.assign(16, 0);
    Connect(&client);
    StartVerifying(version);
    const auto delivered = counters_.delivered_messages.load();
    Events().OnAclCheck(AclCheck(&client, kAclRead, "events/a", 1));
    Events().OnAclCheck(AclCheck(&client, kAclWrite, "events/a", 1));
    EXPECT_EQ(Events().OnMessage(Message(&client, "events/a")), kBrokerSuccess);
    EXPECT_EQ(counters_.delivered_messages.load(), delivered + 1);  // the delivery was seen
    EXPECT_TRUE(core_->layout()->verifying());
    EXPECT_TRUE(broker_.log.empty());
    Events().OnAclCheck(AclCheck(&client, access, "events/a"));  // the broker's own answer
    EXPECT_EQ(core_->layout()->state(), BrokerLayoutVerifier::State::kUnknown);
    ASSERT_EQ(broker_.log.size(), 1u);
    EXPECT_NE(broker_.log[0].second.find("broker layout: unknown: "), std::string::npos);
  }
  // At CONNECT (2.0: BASIC_AUTH), and 2.1's CONNECT and SUBSCRIBE events.
  Use(FakeBroker::Api20());
  FakeClient client = Client("b");
  StartVerifying(version);
  Events().OnBasicAuth(client.handle());
  EXPECT_EQ(core_->layout()->state(), BrokerLayoutVerifier::State::kUnknown);
  version.minor = 1;
  version.patch = 2;
  for (int step = 0; step < 2; ++step) {
    Use(FakeBroker::Api21());
    FakeClient other = Client("c");
    Connect(&other);
    StartVerifying(version);
    EXPECT_EQ(Events().OnMessageOut(Message(&other, "events/a")), kBrokerSuccess);
    EXPECT_TRUE(core_->layout()->verifying());
    if (step == 0) {
      Events().OnConnect21(other.handle());
    } else {
      Events().OnSubscribe21(other.handle(), true, "events/a", 0);
    }
    EXPECT_EQ(core_->layout()->state(), BrokerLayoutVerifier::State::kUnknown);
  }
}

// ---- the session expiry interval at a connection's end ----

constexpr std::int64_t kSecond = 1000000000;

// An MQTT 5 client laid out as `truth` says, with this Session Expiry Interval.
FakeClient Mqtt5(const BrokerLayout& truth, const std::string& id, std::uint32_t interval) {
  FakeClient client = LaidOut(truth, id, /*clean=*/false, 60);
  client.facts.protocol_version = 5;
  Put(&client, truth, LayoutField::kProtocol, 5);
  Put(&client, truth, LayoutField::kSessionExpiryInterval, interval);
  return client;
}

class SessionExpiryEventsTest : public BrokerEventsTest {
 protected:
  // A verifier for `version` that trusts `truth` after three other clients' traffic.
  void VerifyLayout(const BrokerVersion& version, const BrokerLayout& truth) {
    StartVerifying(version);
    std::vector<FakeClient> others{LaidOut(truth, "v1", true, 60), LaidOut(truth, "v2", false, 30),
                                   LaidOut(truth, "v3", true, 15)};
    Traffic(&broker_, core_->layout(), &others, truth);
    ASSERT_TRUE(core_->layout()->verified());
  }
  // Connected with one subscription, then its connection ends at 100.25 s (2.0's DISCONNECT,
  // or the 2.1 event given).
  void ConnectSubscribeAndLeave(FakeClient* client,
                                DisconnectEvent event = DisconnectEvent::kDisconnect) {
    Connect(client);
    if (broker_.api_2_1()) {
      Events().OnSubscribe21(client->handle(), true, "events/a", 1);
    } else {
      Events().OnAclCheck(AclCheck(client, kAclSubscribe, "events/a", 1));
    }
    broker_.now_ns = 100 * kSecond + 250000000;
    Events().OnDisconnect(client->handle(), broker_.api_2_1() ? 0 : -1, event);
  }
};

// 2.0 with the layout verified: interval 0 ends the session with its connection; a finite one
// is listed with the broker's expiry time and goes at the TICK that follows the broker's expiry.
TEST_F(SessionExpiryEventsTest, On20TheVerifiedLayoutTellsTheInterval) {
  Use(FakeBroker::Api20());
  const BrokerLayout& truth = Debian2021Layout();
  VerifyLayout(Version(2, 0, 21), truth);
  FakeClient zero = Mqtt5(truth, "zero", 0);
  ConnectSubscribeAndLeave(&zero);
  EXPECT_EQ(core_->sessions().offline_count(), 0u);
  EXPECT_TRUE(sink_.offline.empty());

  FakeClient three = Mqtt5(truth, "three", 3);
  ConnectSubscribeAndLeave(&three);
  ASSERT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(sink_.offline[0].client_id, "three");
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 103 * kSecond);
  core_->sessions().ExpireOffline(104 * kSecond - 1);  // what TICK calls
  EXPECT_EQ(core_->sessions().offline_count(), 1u);
  core_->sessions().ExpireOffline(104 * kSecond);
  EXPECT_EQ(core_->sessions().offline_count(), 0u);
}

// A DISCONNECT packet's Session Expiry Interval is in the client's struct before the plugin's
// DISCONNECT event (src/handle_disconnect.c): it is the one followed.
TEST_F(SessionExpiryEventsTest, ADisconnectThatChangesTheIntervalIsFollowed) {
  Use(FakeBroker::Api20());
  const BrokerLayout& truth = Debian2021Layout();
  VerifyLayout(Version(2, 0, 21), truth);
  FakeClient shortened = Mqtt5(truth, "shortened", 3600);
  Connect(&shortened);
  Put(&shortened, truth, LayoutField::kSessionExpiryInterval, 5);
  broker_.now_ns = 100 * kSecond;
  Events().OnDisconnect(shortened.handle(), -1);
  ASSERT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 105 * kSecond);

  FakeClient ended = Mqtt5(truth, "ended", 3600);
  Connect(&ended);
  Put(&ended, truth, LayoutField::kSessionExpiryInterval, 0);
  Events().OnDisconnect(ended.handle(), -1);
  EXPECT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(core_->sessions().offline_count(), 1u);  // "shortened" alone
}

// Until the layout is verified nothing is read: the session is listed as the client asked,
// with no time. A bridge's own client is left so too. (A client first seen by its message, as
// on a use_identity_as_username listener, is not observed: the layout stays unverified.)
TEST_F(SessionExpiryEventsTest, AnUnverifiedLayoutOrABridgeKeepsTheSessionAsBefore) {
  Use(FakeBroker::Api20());
  const BrokerLayout& truth = Debian2021Layout();
  StartVerifying(Version(2, 0, 21));
  FakeClient zero = Mqtt5(truth, "zero", 0);
  Events().OnMessage(Message(&zero, "events/a"));
  ASSERT_TRUE(core_->layout()->verifying());
  const int reads = broker_.bytes_reads;
  Events().OnDisconnect(zero.handle(), -1);
  EXPECT_EQ(broker_.bytes_reads, reads);
  ASSERT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 0);

  VerifyLayout(Version(2, 0, 21), truth);
  FakeClient bridge = Mqtt5(truth, "bridge", 0);
  Put(&bridge, truth, LayoutField::kIsBridge, 1);
  ConnectSubscribeAndLeave(&bridge);
  ASSERT_EQ(sink_.offline.size(), 2u);
  EXPECT_EQ(sink_.offline[1].expiry_time_ns, 0);
}

// The issue's fresh broker: its first client, MQTT 5 with clean start false and no session
// expiry, verifies the layout at its own CONNECT; when it leaves, its session ends with it (not
// listed OFFLINE). The next one, with 3 s, is listed with the broker's expiry time.
TEST_F(SessionExpiryEventsTest, TheFirstClientOfAFreshBrokerIsFollowedExactly) {
  Use(FakeBroker::Api20());
  const BrokerLayout& truth = Debian2021Layout();
  StartVerifying(Version(2, 0, 21));
  FakeClient first = Mqtt5(truth, "first", 0);
  ConnectSubscribeAndLeave(&first);
  EXPECT_TRUE(core_->layout()->verified());
  EXPECT_EQ(core_->sessions().offline_count(), 0u);
  EXPECT_TRUE(sink_.offline.empty());
  FakeClient three = Mqtt5(truth, "three", 3);
  ConnectSubscribeAndLeave(&three);
  ASSERT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 103 * kSecond);
}

// 2.1 tells interval 0 by its event: DISCONNECT ends the session, CLIENT_OFFLINE keeps it,
// with its time where the layout is verified.
TEST_F(SessionExpiryEventsTest, On21TheEventTellsWhetherTheSessionEnds) {
  Use(FakeBroker::Api21());
  FakeClient ends = Client("ends", 5);
  ends.facts.clean_session = false;
  ConnectSubscribeAndLeave(&ends, DisconnectEvent::kDisconnect);
  EXPECT_EQ(core_->sessions().offline_count(), 0u);
  FakeClient stays = Client("stays", 5);
  stays.facts.clean_session = false;
  ConnectSubscribeAndLeave(&stays, DisconnectEvent::kClientOffline);
  ASSERT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 0);  // how long: unknown without the layout

  const BrokerLayout& truth = Builtin21Layout();
  VerifyLayout(Version(2, 1, 2), truth);
  FakeClient three = Mqtt5(truth, "three", 3);
  ConnectSubscribeAndLeave(&three, DisconnectEvent::kClientOffline);
  ASSERT_EQ(sink_.offline.size(), 2u);
  EXPECT_EQ(sink_.offline[1].expiry_time_ns, 103 * kSecond);
  // A 0 read against CLIENT_OFFLINE's word is not believed: listed with no time.
  FakeClient odd = Mqtt5(truth, "odd", 0);
  ConnectSubscribeAndLeave(&odd, DisconnectEvent::kClientOffline);
  ASSERT_EQ(sink_.offline.size(), 3u);
  EXPECT_EQ(sink_.offline[2].expiry_time_ns, 0);
}

// 2.1 without a verified layout: the broker expires a session with no plugin event
// (src/session_expiry.c: session_expiry__check); the plugin asks it at TICK whether it still
// holds the session's client under its id (mosquitto_client), and ends the session when not.
TEST_F(SessionExpiryEventsTest, On21WithoutTheLayoutTheBrokersLookupTellsTheExpiry) {
  Use(FakeBroker::Api21());
  FakeClient stays = Client("stays", 5);
  stays.facts.clean_session = false;
  ConnectSubscribeAndLeave(&stays, DisconnectEvent::kClientOffline);
  ASSERT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 0);
  broker_.clients_by_id["stays"] = &stays;  // offline, still held
  Events().FollowUnknownExpiry(broker_.monotonic_ns);
  EXPECT_EQ(broker_.client_lookups, 1);
  EXPECT_EQ(core_->sessions().offline_count(), 1u);
  broker_.clients_by_id.erase("stays");  // expired
  broker_.monotonic_ns += 50000000;
  Events().FollowUnknownExpiry(broker_.monotonic_ns);
  EXPECT_EQ(core_->sessions().offline_count(), 0u);
  Events().FollowUnknownExpiry(broker_.monotonic_ns + 50000000);
  EXPECT_EQ(broker_.client_lookups, 2);  // nothing left to ask about
}

// The same id resumed by a new connection: the broker holds the new client object under it
// before the plugin's CONNECT settles the resume. Not an expiry: the session's subscriptions
// pass to the new connection, and the offline session ends once.
TEST_F(SessionExpiryEventsTest, On21AResumeIsNotTakenForAnExpiry) {
  Use(FakeBroker::Api21());
  FakeClient old_client = Client("resumed", 5);
  old_client.facts.clean_session = false;
  ConnectSubscribeAndLeave(&old_client, DisconnectEvent::kClientOffline);
  old_client.socket = -1;
  FakeClient new_client = Client("resumed", 5);
  new_client.facts.clean_session = false;
  Events().OnBasicAuth(new_client.handle());
  broker_.clients_by_id["resumed"] = &new_client;
  Events().FollowUnknownExpiry(broker_.monotonic_ns);
  EXPECT_EQ(core_->sessions().offline_count(), 1u);
  // src/handle_connect.c: the offline object's DISCONNECT (taken over), then CONNECT.
  constexpr int kSessionTakenOver = 142;  // MOSQ_ERR_SESSION_TAKEN_OVER
  Events().OnDisconnect(old_client.handle(), kSessionTakenOver, DisconnectEvent::kDisconnect);
  Events().OnConnect21(new_client.handle());
  Events().FollowUnknownExpiry(broker_.monotonic_ns + 50000000);
  EXPECT_EQ(core_->sessions().offline_count(), 0u);
  ASSERT_EQ(sink_.connections.size(), 2u);
  const std::uint64_t seq = sink_.connections[1].seq;
  int handed_over = 0;
  for (const auto& [type, subscription] : sink_.subscriptions) {
    if (type == EventType::kSubscribe && subscription.seq == seq) ++handed_over;
  }
  EXPECT_EQ(handed_over, 1);
}

// With the layout verified the expiry is read at the close and followed from its time: no
// session is of unknown expiry, and TICK asks the broker nothing. 2.0 has no lookup at all.
TEST_F(SessionExpiryEventsTest, AVerifiedLayoutOr20AsksTheBrokerNothing) {
  Use(FakeBroker::Api21());
  const BrokerLayout& truth = Builtin21Layout();
  VerifyLayout(Version(2, 1, 2), truth);
  FakeClient three = Mqtt5(truth, "three", 3);
  ConnectSubscribeAndLeave(&three, DisconnectEvent::kClientOffline);
  ASSERT_EQ(sink_.offline.size(), 1u);
  EXPECT_EQ(sink_.offline[0].expiry_time_ns, 103 * kSecond);
  EXPECT_EQ(core_->sessions().unknown_expiry_count(), 0u);
  Events().FollowUnknownExpiry(broker_.monotonic_ns);
  EXPECT_EQ(broker_.client_lookups, 0);
  EXPECT_EQ(core_->sessions().offline_count(), 1u);

  Use(FakeBroker::Api20());
  FakeClient v5 = Client("v5", 5);
  v5.facts.clean_session = false;
  ConnectSubscribeAndLeave(&v5);
  EXPECT_EQ(core_->sessions().offline_count(), 1u);
  Events().FollowUnknownExpiry(broker_.monotonic_ns);
  EXPECT_EQ(broker_.client_lookups, 0);
}

// No TICK asks about more than kMaxExpiryChecks sessions, however many there are; TICKs in a
// row go round all of them.
TEST_F(SessionExpiryEventsTest, EachTickAsksABoundedSliceAndTheSlicesGoRound) {
  Use(FakeBroker::Api21());
  constexpr std::size_t kSessions = TickPacing::kMaxExpiryChecks * 2 + 10;
  std::deque<FakeClient> clients;
  for (std::size_t i = 0; i < kSessions; ++i) {
    FakeClient& client = clients.emplace_back(Client("s" + std::to_string(i), 5));
    client.facts.clean_session = false;
    Connect(&client);
    Events().OnDisconnect(client.handle(), 0, DisconnectEvent::kClientOffline);
    broker_.clients_by_id[client.facts.client_id] = &client;
  }
  ASSERT_EQ(core_->sessions().unknown_expiry_count(), kSessions);
  // The broker expired the youngest: the first TICK's slice does not reach it.
  broker_.clients_by_id.erase("s" + std::to_string(kSessions - 1));
  int ticks = 0;
  while (core_->sessions().offline_count() == kSessions && ticks < 100) {
    const int before = broker_.client_lookups;
    Events().FollowUnknownExpiry(broker_.monotonic_ns);
    broker_.monotonic_ns += 50000000;  // 2.1's idle TICKs: a twentieth of a round each
    EXPECT_LE(broker_.client_lookups - before,
              static_cast<int>(TickPacing::kMaxExpiryChecks));
    EXPECT_GE(broker_.client_lookups - before, 1);
    ++ticks;
  }
  EXPECT_EQ(core_->sessions().offline_count(), kSessions - 1);
  EXPECT_GT(ticks, 1);  // not all at once
  EXPECT_LT(ticks, 100);
}

// ---- bridges ----

// The broker's own bridge context: no CONNECT, no address (src/bridge.c gives it none), a
// socket connected to the remote broker. Laid out as `truth`, with is_bridge set as
// src/bridge.c: bridge__new sets it.
FakeClient OwnBridge(const BrokerLayout& truth) {
  FakeClient client = LaidOut(truth, "local.host.to-remote", /*clean=*/false, 60);
  Put(&client, truth, LayoutField::kIsBridge, 1);
  client.facts.ip_address.clear();  // and so no port nor listener (ReadSocketPorts)
  client.facts.port = 0;
  client.facts.local_port = 0;
  client.peer_ip = "192.0.2.7";
  client.peer_port = 1884;
  return client;
}

class BridgeEventsTest : public SessionExpiryEventsTest {
 protected:
  const ConnectionEvent* Announced(const std::string& client_id) const {
    for (const ConnectionEvent& event : sink_.connections) {
      if (event.client_id == client_id) return &event;
    }
    return nullptr;
  }
  // Three clients connect and change their subscriptions through the handlers (2.0: the ACL
  // checks) until the verifier trusts `truth`.
  void VerifyThroughHandlers(const BrokerLayout& truth) {
    for (const char* id : {"v1", "v2", "v3"}) {
      others_.push_back(LaidOut(truth, id, true, 60));
    }
    for (FakeClient& client : others_) {
      Connect(&client);
      SetSubCount(&client, truth, 1);
      Events().OnAclCheck(AclCheck(&client, kAclSubscribe, "events/a", 1));
      SetSubCount(&client, truth, 2);
      Events().OnAclCheck(AclCheck(&client, kAclSubscribe, "events/b", 1));
      SetSubCount(&client, truth, 1);
      Events().OnAclCheck(AclCheck(&client, kAclUnsubscribe, "events/a", 0));
    }
  }
  std::vector<FakeClient> others_;
};

// Without any layout (2.0 and 2.1 alike): the broker's own bridge is an outgoing bridge from
// its first message on, with the remote broker's address, read once.
TEST_F(BridgeEventsTest, TheBrokersOwnBridgeIsOutgoingWithItsPeerOnEveryBuild) {
  for (bool api_21 : {false, true}) {
    Use(api_21 ? FakeBroker::Api21() : FakeBroker::Api20());
    sink_.connections.clear();
    const BrokerLayout& truth = Debian2021Layout();
    FakeClient own = OwnBridge(truth);
    if (api_21) {
      Events().OnMessageOut(Message(&own, "events/bridge/x"));
    } else {
      Events().OnMessage(Message(&own, "events/bridge/x"));
    }
    const ConnectionEvent* event = Announced(own.facts.client_id);
    ASSERT_NE(event, nullptr) << api_21;
    EXPECT_EQ(event->bridge, BridgeRole::kOutgoing);
    EXPECT_EQ(event->ip_address, "192.0.2.7");
    EXPECT_EQ(event->port, 1884);
    EXPECT_EQ(event->local_port, 0);  // no listener
    const int peer_reads = broker_.peer_reads;
    Events().OnMessage(Message(&own, "events/bridge/y"));  // per message: nothing read
    EXPECT_EQ(broker_.peer_reads, peer_reads);
    EXPECT_EQ(sink_.connections.size(), 1u);
  }
}

// A client first seen without its CONNECT but with an address (use_identity_as_username) is
// no outgoing bridge: unknown until the layout says.
TEST_F(BridgeEventsTest, AClientSeenWithoutConnectButWithAnAddressIsNoOutgoingBridge) {
  Use(FakeBroker::Api20());
  FakeClient identity = Client("by-certificate");
  identity.peer_ip = "127.0.0.1";
  Events().OnMessage(Message(&identity, "events/a"));
  const ConnectionEvent* event = Announced("by-certificate");
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(event->bridge, BridgeRole::kUnknown);
  EXPECT_EQ(event->ip_address, identity.facts.ip_address);
}

// At CONNECT: the verified layout's is_bridge (set by the CONNECT's bridge bit) makes an
// incoming bridge, or no bridge. The first CONNECT verifies the layout and is read through it.
TEST_F(BridgeEventsTest, AtConnectTheVerifiedLayoutTellsAnIncomingBridge) {
  Use(FakeBroker::Api20());
  const BrokerLayout& truth = Debian2021Layout();
  StartVerifying(Version(2, 0, 21));
  FakeClient early = LaidOut(truth, "early", true, 60);
  Connect(&early);
  ASSERT_TRUE(core_->layout()->verified());
  ASSERT_NE(Announced("early"), nullptr);
  EXPECT_EQ(Announced("early")->bridge, BridgeRole::kNone);

  VerifyLayout(Version(2, 0, 21), truth);
  FakeClient remote_bridge = LaidOut(truth, "remote.to-here", false, 60);
  Put(&remote_bridge, truth, LayoutField::kIsBridge, 1);
  Connect(&remote_bridge);
  FakeClient plain = LaidOut(truth, "plain", true, 60);
  Connect(&plain);
  EXPECT_EQ(Announced("remote.to-here")->bridge, BridgeRole::kIncoming);
  EXPECT_EQ(Announced("remote.to-here")->ip_address, remote_bridge.facts.ip_address);
  EXPECT_EQ(Announced("plain")->bridge, BridgeRole::kNone);
  // 2.1 reads it alike (at BASIC_AUTH, and for a client first seen at its CONNECT event).
  Use(FakeBroker::Api21());
  const BrokerLayout& truth_21 = Builtin21Layout();
  VerifyLayout(Version(2, 1, 2), truth_21);
  FakeClient bridge_21 = LaidOut(truth_21, "remote.21", false, 60);
  Put(&bridge_21, truth_21, LayoutField::kIsBridge, 1);
  Events().OnConnect21(bridge_21.handle());  // no BASIC_AUTH seen (use_identity_as_username)
  core_->connects().Settle();
  ASSERT_NE(Announced("remote.21"), nullptr);
  EXPECT_EQ(Announced("remote.21")->bridge, BridgeRole::kIncoming);
}

// The layout verified after connections opened: each bridge among them is announced, then
// every other one as no bridge, once. The broker's own bridge keeps its role.
TEST_F(BridgeEventsTest, VerifyingTheLayoutResolvesTheConnectionsOpenedBefore) {
  Use(FakeBroker::Api20());
  const BrokerLayout& truth = Debian2021Layout();
  StartVerifying(Version(2, 0, 21));
  // Seen first by its message (no CONNECT observed: a use_identity_as_username listener).
  FakeClient remote_bridge = LaidOut(truth, "remote.to-here", false, 60);
  Put(&remote_bridge, truth, LayoutField::kIsBridge, 1);
  Events().OnMessage(Message(&remote_bridge, "events/a"));
  FakeClient own = OwnBridge(truth);
  Events().OnMessage(Message(&own, "events/bridge/x"));
  ASSERT_TRUE(core_->layout()->verifying());
  ASSERT_EQ(Announced("remote.to-here")->bridge, BridgeRole::kUnknown);
  ASSERT_EQ(Announced(own.facts.client_id)->bridge, BridgeRole::kOutgoing);
  EXPECT_TRUE(sink_.bridges.empty());

  VerifyThroughHandlers(truth);
  ASSERT_TRUE(core_->layout()->verified());
  ASSERT_EQ(sink_.bridges.size(), 2u);
  EXPECT_EQ(sink_.bridges[0].seq, 0u);
  EXPECT_EQ(sink_.bridges[0].role, BridgeRole::kNone);
  EXPECT_EQ(sink_.bridges[1].seq, Announced("remote.to-here")->seq);
  EXPECT_EQ(sink_.bridges[1].role, BridgeRole::kIncoming);
  // Once: more observations announce nothing more.
  FakeClient later = LaidOut(truth, "later", true, 60);
  Connect(&later);
  EXPECT_EQ(sink_.bridges.size(), 2u);
  EXPECT_EQ(Announced("later")->bridge, BridgeRole::kNone);
}

// Behind a load balancer (a PROXY protocol listener, 2.1): the socket's port is the balancer's,
// so the client's own port is the broker's `remote_port` (from the PROXY header), read through
// the layout its own CONNECT verifies; a client the broker's socket reaches directly keeps the
// socket's port whatever remote_port holds; and without a verified layout the port stays
// unknown (0), never the balancer's.
TEST_F(BridgeEventsTest, BehindALoadBalancerThePortIsTheBrokersFromThePROXYHeader) {
  Use(FakeBroker::Api21());
  const BrokerLayout& truth = Builtin21Layout();
  StartVerifying(Version(2, 1, 2));
  FakeClient proxied = LaidOut(truth, "behind", true, 60);
  proxied.facts.proxied = true;
  proxied.facts.proxy_ip = "127.0.0.1";
  proxied.facts.proxy_port = 41000;
  proxied.facts.port = 0;
  Put(&proxied, truth, LayoutField::kRemotePort, 50709);
  Connect(&proxied);
  ASSERT_TRUE(core_->layout()->verified());
  const ConnectionEvent* event = Announced("behind");
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(event->port, 50709);
  EXPECT_EQ(event->proxy_address, "127.0.0.1");
  EXPECT_EQ(event->proxy_port, 41000);

  FakeClient direct = LaidOut(truth, "direct", true, 60);
  direct.facts.port = 40000;
  Put(&direct, truth, LayoutField::kRemotePort, 40001);
  Connect(&direct);
  ASSERT_NE(Announced("direct"), nullptr);
  EXPECT_EQ(Announced("direct")->port, 40000);
  EXPECT_EQ(Announced("direct")->proxy_address, "");
  EXPECT_EQ(Announced("direct")->proxy_port, 0);

  // A layout that cannot be verified (a build the table does not know): no port at all.
  core_->UseLayout(std::make_unique<BrokerLayoutVerifier>(std::vector<const BrokerLayout*>{},
                                                         Version(2, 1, 2)));
  FakeClient unverified = LaidOut(truth, "unverified", true, 60);
  unverified.facts = proxied.facts;
  unverified.facts.client_id = "unverified";
  Put(&unverified, truth, LayoutField::kRemotePort, 50710);
  Connect(&unverified);
  ASSERT_NE(Announced("unverified"), nullptr);
  EXPECT_EQ(Announced("unverified")->port, 0);
  EXPECT_EQ(Announced("unverified")->proxy_port, 41000);
}

// Whether a client has a will: the client struct's `will` pointer, non-null or null, read at
// CONNECT through the layout that CONNECT verifies; unknown without a verified layout.
TEST_F(BridgeEventsTest, AWillIsReadAtConnectThroughTheVerifiedLayout) {
  Use(FakeBroker::Api20());
  const BrokerLayout& truth = Debian2021Layout();
  StartVerifying(Version(2, 0, 21));
  FakeClient with_will = LaidOut(truth, "with-will", true, 60);
  Put(&with_will, truth, LayoutField::kWill, 0x7f0012345678);  // compared with null only
  Connect(&with_will);
  ASSERT_TRUE(core_->layout()->verified());
  ASSERT_NE(Announced("with-will"), nullptr);
  EXPECT_EQ(Announced("with-will")->will, WillState::kSet);
  FakeClient without = LaidOut(truth, "without-will", true, 60);
  Connect(&without);
  ASSERT_NE(Announced("without-will"), nullptr);
  EXPECT_EQ(Announced("without-will")->will, WillState::kNone);

  core_->UseLayout(std::make_unique<BrokerLayoutVerifier>(std::vector<const BrokerLayout*>{},
                                                          Version(2, 0, 21)));
  FakeClient unverified = LaidOut(truth, "unverified-will", true, 60);
  Put(&unverified, truth, LayoutField::kWill, 0x7f0012345678);
  Connect(&unverified);
  ASSERT_NE(Announced("unverified-will"), nullptr);
  EXPECT_EQ(Announced("unverified-will")->will, WillState::kUnknown);
}

// A layout that failed verification reads nothing, for good: bridges at CONNECT stay unknown
// and nothing is announced; the broker's own bridge is still known by how it is seen.
TEST_F(BridgeEventsTest, AFailedLayoutReadsNothingAndSaysUnknown) {
  Use(FakeBroker::Api20());
  const BrokerLayout& truth = Debian2021Layout();
  // Version 2.1's candidates on a 2.0 struct: none agrees.
  StartVerifying(Version(2, 1, 2));
  VerifyThroughHandlers(truth);
  ASSERT_EQ(core_->layout()->state(), BrokerLayoutVerifier::State::kUnknown);
  FakeClient remote_bridge = LaidOut(truth, "remote.to-here", false, 60);
  Put(&remote_bridge, truth, LayoutField::kIsBridge, 1);
  const int reads = broker_.bytes_reads;
  Connect(&remote_bridge);
  EXPECT_EQ(broker_.bytes_reads, reads);
  EXPECT_EQ(Announced("remote.to-here")->bridge, BridgeRole::kUnknown);
  FakeClient own = OwnBridge(truth);
  Events().OnMessage(Message(&own, "events/bridge/x"));
  EXPECT_EQ(Announced(own.facts.client_id)->bridge, BridgeRole::kOutgoing);
  EXPECT_TRUE(sink_.bridges.empty());
}

// ---- queued and in-flight messages ----

// The counts as the slot holds them for the companion.
MessageCounts SlotCounts(BrokerCore& core, const ConnectionStatsSlot* slot) {
  const ConnectionRareSlot& rare = core.sessions().Rare(*slot);
  MessageCounts counts;
  counts.out = DecodeMessageQueue(rare.messages_out.load());
  counts.in = DecodeMessageQueue(rare.messages_in.load());
  return counts;
}

void PutCounts(FakeClient* client, const BrokerLayout& truth, int out_queued, int out_in_flight,
               int in_queued, int in_in_flight) {
  Put(client, truth, LayoutField::kMsgsOutQueuedCount, out_queued);
  Put(client, truth, LayoutField::kMsgsOutInflightCount, out_in_flight);
  Put(client, truth, LayoutField::kMsgsInQueuedCount, in_queued);
  Put(client, truth, LayoutField::kMsgsInInflightCount, in_in_flight);
}

// Nothing is copied before the layout is verified: the slot says "unknown", not 0. Once
// verified, a SUBSCRIBE (2.0's ACL check) copies the counts, and TICK's sweep keeps them fresh
// without any message passing through the plugin.
TEST_F(SessionExpiryEventsTest, MessageCountsAreCopiedOnceTheLayoutIsVerified) {
  Use(FakeBroker::Api20());
  const BrokerVersion version = Version(2, 0, 21);
  const BrokerLayout& truth = Debian2021Layout();
  StartVerifying(version);
  // Seen first by its message (no CONNECT observed): nothing verified yet.
  FakeClient slow = LaidOut(truth, "slow", true, 60);
  PutCounts(&slow, truth, 7, 3, 0, 1);
  Events().OnMessage(Message(&slow, "events/a"));
  ConnectionStatsSlot* slot = core_->sessions().View(slow.handle()).stats;
  ASSERT_NE(slot, nullptr);
  Events().SweepMessageCounts(broker_.monotonic_ns);
  ASSERT_TRUE(core_->layout()->verifying());
  EXPECT_EQ(core_->sessions().Rare(*slot).messages_out.load(), 0u);
  EXPECT_EQ(SlotCounts(*core_, slot).out.known, MessageQueue::Known::kUnknown);

  // Its SUBSCRIBE verifies the layout, and copies its counts.
  SetSubCount(&slow, truth, 1);
  Events().OnAclCheck(AclCheck(&slow, kAclSubscribe, "events/b", 1));
  ASSERT_TRUE(core_->layout()->verified());
  // The first sweep once verified starts the sweep's clock (and walks one slot).
  Events().SweepMessageCounts(broker_.monotonic_ns);
  MessageCounts counts = SlotCounts(*core_, slot);
  EXPECT_EQ(counts.out.known, MessageQueue::Known::kSplit);
  EXPECT_EQ(counts.out.queued, 7u);
  EXPECT_EQ(counts.out.in_flight, 3u);
  EXPECT_EQ(counts.out.total, 10u);
  EXPECT_EQ(counts.in.queued, 0u);
  EXPECT_EQ(counts.in.in_flight, 1u);

  // The broker queues more; no callback touches the client; the sweep sees it.
  PutCounts(&slow, truth, 100, 20, 0, 0);
  const int reads = broker_.bytes_reads;
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&slow, kAclRead, "events/a", 1)), kBrokerSuccess);
  // The counts are never read per message: only the drop check's two ints (this full path
  // reads them bounds checked; queue_drops.h, MayDrop), whose window has room here.
  EXPECT_EQ(broker_.bytes_reads, reads + 2);
  EXPECT_EQ(SlotCounts(*core_, slot).out.queued, 7u);
  broker_.monotonic_ns += MessageCountSweep::kRoundNs;  // a whole round
  Events().SweepMessageCounts(broker_.monotonic_ns);
  EXPECT_EQ(broker_.bytes_reads, reads + 3);  // one read of the span, for the one open client
  counts = SlotCounts(*core_, slot);
  EXPECT_EQ(counts.out.queued, 100u);
  EXPECT_EQ(counts.out.in_flight, 20u);
  EXPECT_EQ(counts.in.in_flight, 0u);
  EXPECT_EQ(counts.in.known, MessageQueue::Known::kSplit);

  // A negative count is no figure: the slot keeps its last good one.
  PutCounts(&slow, truth, -5, 20, 0, 0);
  broker_.monotonic_ns += MessageCountSweep::kRoundNs;  // a whole round
  Events().SweepMessageCounts(broker_.monotonic_ns);
  EXPECT_EQ(SlotCounts(*core_, slot).out.queued, 100u);

  // A connection's end hands the slot over: the next owner starts unknown.
  Events().OnDisconnect(slow.handle(), -1);
  FakeClient next = LaidOut(truth, "next", true, 60);
  Connect(&next);
  ConnectionStatsSlot* next_slot = core_->sessions().View(next.handle()).stats;
  ASSERT_NE(next_slot, nullptr);
  EXPECT_EQ(SlotCounts(*core_, next_slot).out.known, MessageQueue::Known::kUnknown);
}

// ---- messages dropped at a full queue ----

// The outgoing queue of a client of `truth` (2.0.13 on), a window of 20.
void PutQueue(FakeClient* client, const BrokerLayout& truth, std::int32_t quota,
              std::int32_t queued_count12, std::int32_t out_packets) {
  PutQueue(client, *QueueOffsetsOf(truth), quota, 20, queued_count12, out_packets);
}

// 2.0: the READ check comes right before the broker queues a message; with the window and the
// queue full (max_queued_messages 1000 by default, counted beyond the window of 20) the broker
// drops it: counted on the connection and by cause, not as delivered. Unknown before the
// layout is verified; a topic two subscriptions match is not counted (QueuedQos).
TEST_F(SessionExpiryEventsTest, AFullQueueDropIsCountedOnTheConnectionAndByCause) {
  Use(FakeBroker::Api20());
  core_->settings().decide_acl = true;  // no other ACL source: the fast path is taken
  const BrokerLayout& truth = Debian2021Layout();
  FakeClient slow = LaidOut(truth, "slow", true, 60);
  PutQueue(&slow, truth, 0, 1020, 0);
  Connect(&slow);
  ConnectionStatsSlot* slot = core_->sessions().View(slow.handle()).stats;
  ASSERT_NE(slot, nullptr);
  Events().OnAclCheck(AclCheck(&slow, kAclSubscribe, "events/#", 1));
  EXPECT_FALSE(DecodeDrops(slot->dropped_queue_full.load()).known);  // no layout: unknown
  Events().OnAclCheck(AclCheck(&slow, kAclRead, "events/a", 1));
  EXPECT_EQ(slot->deliver_count.load(), 1u);  // not seen: counted as delivered

  VerifyLayout(Version(2, 0, 21), truth);
  SetSubCount(&slow, truth, 1);
  Events().OnAclCheck(AclCheck(&slow, kAclSubscribe, "events/#", 1));  // observed: armed
  ASSERT_TRUE(core_->drops().armed());
  EXPECT_EQ(DecodeDrops(slot->dropped_queue_full.load()), (MessageDrops{true, 0}));
  const auto queue_full = static_cast<std::size_t>(DropReason::kQueueFull);
  const std::uint64_t dropped_before = counters_.messages_dropped[queue_full].load();

  // Room in the window: delivered, through the fast path's two reads.
  PutQueue(&slow, truth, 3, 0, 0);
  const int int_reads = broker_.int_reads;
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&slow, kAclRead, "events/a", 1)), kBrokerSuccess);
  EXPECT_EQ(broker_.int_reads, int_reads + 2);
  EXPECT_EQ(slot->deliver_count.load(), 2u);
  // Window full, queue below its limit (1019 - 20 < 1000): queued, delivered.
  PutQueue(&slow, truth, 0, 1019, 0);
  Events().OnAclCheck(AclCheck(&slow, kAclRead, "events/a", 1));
  EXPECT_EQ(slot->deliver_count.load(), 3u);
  // Queue full: dropped, twice.
  PutQueue(&slow, truth, 0, 1020, 0);
  Events().OnAclCheck(AclCheck(&slow, kAclRead, "events/a", 1));
  EXPECT_EQ(Events().OnAclCheck(AclCheck(&slow, kAclRead, "events/b", 2)), kBrokerSuccess);
  EXPECT_EQ(slot->deliver_count.load(), 3u);
  EXPECT_EQ(DecodeDrops(slot->dropped_queue_full.load()), (MessageDrops{true, 2}));
  EXPECT_EQ(counters_.messages_dropped[queue_full].load(), dropped_before + 2);
  // A QoS 0 message goes out whatever the queue holds (the socket's queue is empty).
  Events().OnAclCheck(AclCheck(&slow, kAclRead, "events/a", 0));
  EXPECT_EQ(slot->deliver_count.load(), 4u);
  // Two subscriptions match: which copy the broker queues at which QoS is not told.
  Events().OnAclCheck(AclCheck(&slow, kAclSubscribe, "events/c", 0));
  Events().OnAclCheck(AclCheck(&slow, kAclRead, "events/c", 1));
  EXPECT_EQ(slot->deliver_count.load(), 5u);
  EXPECT_EQ(DecodeDrops(slot->dropped_queue_full.load()).queue_full, 2u);
}

// 2.0.11 and 2.0.12 (Debian 12's broker) count in flight and queued together: only the sum is
// copied, and queued / in flight stay unknown.
TEST_F(SessionExpiryEventsTest, On2011OnlyTheSumIsKnown) {
  Use(FakeBroker::Api20());
  const BrokerVersion version = Version(2, 0, 11);
  const BrokerLayout& truth = *Named(BrokerLayoutCandidates(version), "2.0.12 TLS ADNS WebSockets");
  VerifyLayout(version, truth);
  FakeClient slow = LaidOut(truth, "slow", true, 60);
  Put(&slow, truth, LayoutField::kMsgsOutCount, 42);
  Put(&slow, truth, LayoutField::kMsgsInCount, 2);
  Connect(&slow);
  Events().OnAclCheck(AclCheck(&slow, kAclSubscribe, "events/a", 1));
  const MessageCounts counts = SlotCounts(*core_, core_->sessions().View(slow.handle()).stats);
  EXPECT_EQ(counts.out.known, MessageQueue::Known::kTotal);
  EXPECT_EQ(counts.out.total, 42u);
  EXPECT_EQ(counts.out.queued, 0u);
  EXPECT_EQ(counts.in.known, MessageQueue::Known::kTotal);
  EXPECT_EQ(counts.in.total, 2u);
}

// A wrong table: the broker's struct is laid out further on than the table says (8 bytes
// against a table of that one layout; 4 bytes against the whole table, since 8 bytes is where
// ADNS's pointer puts the next candidate). The verification switches itself off (one warning),
// nothing crashes, and no connection ever shows a figure, however much traffic, subscriptions
// and sweeps follow.
TEST_F(SessionExpiryEventsTest, AShiftedLayoutYieldsNoFigure) {
  for (bool api21 : {false, true}) {
    for (int shift : {8, 4}) {
      SCOPED_TRACE(std::string(api21 ? "2.1" : "2.0") + ", shifted by " + std::to_string(shift));
      Use(api21 ? FakeBroker::Api21() : FakeBroker::Api20());
      const BrokerVersion version = api21 ? Version(2, 1, 2) : Version(2, 0, 21);
      const std::vector<const BrokerLayout*> all = BrokerLayoutCandidates(version);
      const BrokerLayout* truth =
          Named(all, api21 ? "2.1 TLS builtin WebSockets" : "2.0.15-2.0.22 TLS ADNS WebSockets");
      BrokerLayout shifted = *truth;
      for (FieldPlace& place : shifted.fields) {
        if (place.size != 0) place.offset = static_cast<std::uint16_t>(place.offset + shift);
      }
      const std::vector<const BrokerLayout*> table =
          shift == 8 ? std::vector<const BrokerLayout*>{truth} : all;
      core_->UseLayout(std::make_unique<BrokerLayoutVerifier>(table, version));
      std::vector<FakeClient> clients;
      for (int i = 0; i < 6; ++i) {
        clients.push_back(LaidOut(shifted, "c" + std::to_string(i), i % 2 == 0, 60));
        PutCounts(&clients.back(), shifted, 5, 5, 0, 0);
      }
      for (FakeClient& client : clients) Connect(&client);
      for (int round = 0; round < 3; ++round) {
        for (FakeClient& client : clients) {
          SetSubCount(&client, shifted, round + 1);
          if (api21) {
            Events().OnSubscribe21(client.handle(), true, "events/a", 1);
          } else {
            Events().OnAclCheck(AclCheck(&client, kAclSubscribe, "events/a", 1));
          }
        }
        broker_.monotonic_ns += MessageCountSweep::kRoundNs;  // a whole round
        Events().SweepMessageCounts(broker_.monotonic_ns);
      }
      EXPECT_EQ(core_->layout()->state(), BrokerLayoutVerifier::State::kUnknown);
      for (FakeClient& client : clients) {
        const ConnectionStatsSlot* slot = core_->sessions().View(client.handle()).stats;
        ASSERT_NE(slot, nullptr);
        EXPECT_EQ(core_->sessions().Rare(*slot).messages_out.load(), 0u);
        EXPECT_EQ(core_->sessions().Rare(*slot).messages_in.load(), 0u);
      }
      int warnings = 0;
      for (const auto& [level, text] : broker_.log) {
        if (level == LogLevel::kWarning &&
            text.find("broker layout: unknown") != std::string::npos) {
          ++warnings;
        }
      }
      EXPECT_EQ(warnings, 1);
    }
  }
}

// The sweep walks the open table in slices: every open connection is refreshed within one
// round, whatever the number of connections, and a TICK never walks more than kMaxSlots.
TEST(MessageCountSweepTest, SlicesFollowTheTimeBetweenTicks) {
  MessageCountSweep sweep;
  const std::size_t table = 262144;                                      // 100,000 connections
  EXPECT_EQ(sweep.SlotsNow(1000, table), MessageCountSweep::kMinSlots);  // the first: no interval
  EXPECT_EQ(sweep.SlotsNow(1000 + 1000000, table), 263u);                // 1 ms: 1/1000 of it
  EXPECT_EQ(sweep.SlotsNow(1000 + 101000000, table), MessageCountSweep::kMaxSlots);  // 100 ms
  EXPECT_EQ(sweep.SlotsNow(1000 + 102000000, 128), 1u);  // 16 connections: one slot a ms
  EXPECT_EQ(sweep.SlotsNow(1000 + 102000000, 128), 1u);  // no time: still one
  EXPECT_EQ(sweep.SlotsNow(1000 + 9102000000, table), MessageCountSweep::kMaxSlots);
}

// ---- TICK ----

// Every TICK settles what the callbacks before it left open and ends a reload's re-check; the
// periodic work waits for its interval (here not yet due: it would need the companion's link).
TEST_F(BrokerEventsTest, ATickSettlesAndEndsAReload) {
  Use(FakeBroker::Api20());
  FakeClient client = Client("a");
  core_->connects().BeginReload();
  Events().OnBasicAuth(client.handle());  // a new CONNECT during the reload
  ASSERT_TRUE(core_->connects().reloading());
  ASSERT_TRUE(core_->connects().has_unsettled());
  core_->tick().work_ns = broker_.monotonic_ns;
  EXPECT_EQ(Events().OnTick(), kBrokerSuccess);
  EXPECT_FALSE(core_->connects().reloading());
  EXPECT_FALSE(core_->connects().has_unsettled());
  EXPECT_EQ(core_->tick().work_ns, broker_.monotonic_ns);  // the periodic work did not run
  EXPECT_EQ(counters_.connects.load(), 1u);
}

// The periodic work through a real shared region: a TICK once kWorkIntervalNs has passed
// carries out the companion's commands (here a kick), a TICK before it does not; the offline
// sessions the broker has expired end in the housekeeping tier, once kHousekeepingIntervalNs
// has passed since the last.
TEST_F(BrokerEventsTest, TheTicksPeriodicWorkRunsOncePerIntervalAndHousekeepingLess) {
  Use(FakeBroker::Api20());
  ASSERT_NO_FATAL_FAILURE(UseRealRegion());
  SharedHeader* header = core_->region()->header();
  RingWriter commands(&header->commands, core_->region()->commands_data(), header->commands_capacity);
  KickCommand kick;
  kick.client_id = "a";
  std::string bytes;
  Encode(kick, &bytes);

  core_->sessions().SetPersistentClientExpiration(10);
  FakeClient session = Client("s");
  session.facts.clean_session = false;
  Connect(&session);
  broker_.now_ns = 100 * kSecond;
  Events().OnDisconnect(session.handle(), -1);
  ASSERT_EQ(core_->sessions().offline_count(), 1u);

  core_->tick().work_ns = broker_.monotonic_ns;
  core_->tick().housekeeping_ns = broker_.monotonic_ns;
  broker_.now_ns = 200 * kSecond;  // long past the session's expiry
  ASSERT_TRUE(commands.TryWrite(static_cast<std::uint16_t>(CommandType::kKick), bytes.data(),
                                static_cast<std::uint32_t>(bytes.size())));
  broker_.monotonic_ns += TickPacing::kWorkIntervalNs - 1;
  Events().OnTick();
  EXPECT_TRUE(broker_.kicked.empty());
  EXPECT_EQ(core_->sessions().offline_count(), 1u);

  broker_.monotonic_ns += 1;
  Events().OnTick();
  EXPECT_EQ(broker_.kicked, std::vector<std::string>{"a"});
  EXPECT_EQ(core_->sessions().offline_count(), 1u);  // not yet the housekeeping
  EXPECT_EQ(core_->tick().work_ns, broker_.monotonic_ns);

  // The housekeeping comes with the first periodic work once its own interval is over.
  broker_.monotonic_ns += TickPacing::kHousekeepingIntervalNs - TickPacing::kWorkIntervalNs - 1;
  Events().OnTick();
  EXPECT_EQ(core_->sessions().offline_count(), 1u);
  broker_.monotonic_ns += TickPacing::kWorkIntervalNs;
  Events().OnTick();
  EXPECT_EQ(core_->sessions().offline_count(), 0u);
  EXPECT_EQ(core_->tick().housekeeping_ns, broker_.monotonic_ns);
}

// The TICK's work also acknowledges the ban list it put in force (the admin's answer waits for
// it), and wakes a waiting companion only when events are unread.
TEST_F(BrokerEventsTest, TheTickAcknowledgesBansAndWakesOnlyAWaitingCompanionWithNews) {
  Use(FakeBroker::Api20());
  ASSERT_NO_FATAL_FAILURE(UseRealRegion());
  SharedHeader* header = core_->region()->header();
  RingWriter commands(&header->commands, core_->region()->commands_data(), header->commands_capacity);
  BansCommand bans;
  bans.sequence = 7;
  std::string bytes;
  Encode(bans, &bytes);
  ASSERT_TRUE(commands.TryWrite(static_cast<std::uint16_t>(CommandType::kBans), bytes.data(),
                                static_cast<std::uint32_t>(bytes.size())));
  broker_.monotonic_ns += TickPacing::kWorkIntervalNs;
  Events().OnTick();
  EXPECT_EQ(header->broker.bans_applied.load(), 7u);

  // Waiting, nothing unread: no wake. Then an event: woken once, at the next TICK's work.
  header->companion.waiting.store(1);
  broker_.monotonic_ns += TickPacing::kWorkIntervalNs;
  Events().OnTick();
  EXPECT_EQ(header->broker.wake.load(), 0u);
  EXPECT_EQ(header->companion.waiting.load(), 1u);
  RingWriter events(&header->events, core_->region()->events_data(), header->events_capacity);
  ASSERT_TRUE(events.TryWrite(1, bytes.data(), static_cast<std::uint32_t>(bytes.size())));
  broker_.monotonic_ns += TickPacing::kWorkIntervalNs;
  Events().OnTick();
  EXPECT_EQ(header->broker.wake.load(), 1u);
  EXPECT_EQ(header->companion.waiting.load(), 0u);
  broker_.monotonic_ns += TickPacing::kWorkIntervalNs;
  Events().OnTick();  // not waiting any more: no second wake
  EXPECT_EQ(header->broker.wake.load(), 1u);
}

}  // namespace
}  // namespace mqc
