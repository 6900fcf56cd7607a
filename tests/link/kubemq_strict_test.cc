// SPDX-License-Identifier: BSD-3-Clause
// Tests for KubeMQ strict mode's verdicts (docs/topic-mapping.md, "Strict mode"): each rule of
// the table's "KubeMQ accepts" column, and the choices kubemq_strict.cc documents.
#include "link/kubemq_strict.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace {

using mqc::ClassifyTopic;
using mqc::DefaultPattern;
using mqc::KubemqAcceptsRpcRequest;
using mqc::KubemqPublishVerdict;
using mqc::KubemqPublishVerdictOf;
using mqc::KubemqSubscribeRefusal;
using mqc::MapTopicFilter;

std::string Refusal(std::string_view filter, int qos = 1, int version = 5,
                    DefaultPattern default_pattern = DefaultPattern::kEvents,
                    std::string_view client_id = "me") {
  return KubemqSubscribeRefusal(filter, MapTopicFilter(filter, default_pattern), qos, version,
                                client_id);
}

KubemqPublishVerdict Publish(std::string_view topic,
                             DefaultPattern default_pattern = DefaultPattern::kEvents) {
  return KubemqPublishVerdictOf(topic, ClassifyTopic(topic, default_pattern));
}

TEST(KubemqStrictSubscribe, AcceptsWhatKubemqAccepts) {
  for (const char* filter : {"events/a", "events/+/temp", "events/#", "#", "site1/+", "store/a/b",
                             "$share/workers/queues/jobs/email", "$reply/me/x"}) {
    SCOPED_TRACE(filter);
    EXPECT_EQ(Refusal(filter), "");
  }
  // MQTT 3.1.1 clients subscribe to events and store as well.
  EXPECT_EQ(Refusal("events/a", 0, 4), "");
  EXPECT_EQ(Refusal("store/a", 0, 4), "");
  EXPECT_EQ(Refusal("site1/temp", 0, 4, DefaultPattern::kStore), "");
}

TEST(KubemqStrictSubscribe, RefusesWildcardsOnStoreAndQueues) {
  EXPECT_EQ(Refusal("store/+/a"), "KubeMQ's store pattern takes no wildcards");
  EXPECT_EQ(Refusal("store/#"), "KubeMQ's store pattern takes no wildcards");
  EXPECT_EQ(Refusal("site/#", 1, 5, DefaultPattern::kStore),
            "KubeMQ's store pattern takes no wildcards");
  EXPECT_EQ(Refusal("$share/g/queues/+"), "KubeMQ's queues pattern takes no wildcards");
  // A literal '*' or '>' is no wildcard (it passes through the channel as in KubeMQ).
  EXPECT_EQ(Refusal("store/a*"), "");
}

TEST(KubemqStrictSubscribe, RefusesPublishOnlyPatterns) {
  EXPECT_NE(Refusal("queues/jobs").find("shared subscription"), std::string::npos);
  EXPECT_EQ(Refusal("commands/svc"), "KubeMQ's commands pattern is publish only");
  EXPECT_EQ(Refusal("queries/svc/+"), "KubeMQ's queries pattern is publish only");
}

TEST(KubemqStrictSubscribe, SharedQueuesNeedMqtt5AndQos1) {
  EXPECT_EQ(Refusal("$share/g/queues/jobs", 0, 5), "KubeMQ's queues subscriptions need QoS 1 or 2");
  EXPECT_EQ(Refusal("$share/g/queues/jobs", 1, 4), "KubeMQ's queues subscriptions need MQTT 5");
  EXPECT_EQ(Refusal("$share/g/queues/jobs", 2, 5), "");
  EXPECT_EQ(Refusal("$share/g/events/a"),
            "KubeMQ shares only queues subscriptions ($share/<group>/queues/...)");
  EXPECT_EQ(Refusal("$share/g/store/a"),
            "KubeMQ shares only queues subscriptions ($share/<group>/queues/...)");
}

TEST(KubemqStrictSubscribe, RefusesInvalidMappingsWithTheMappingError) {
  for (const char* filter :
       {"events//x", "events/x/", "/events/x", "events", "events/", "$share//queues/x"}) {
    SCOPED_TRACE(filter);
    const std::string error = MapTopicFilter(filter, DefaultPattern::kEvents).error;
    ASSERT_FALSE(error.empty());
    EXPECT_EQ(Refusal(filter), "no KubeMQ channel: " + error);
  }
}

TEST(KubemqStrictSubscribe, DollarTopics) {
  for (const char* filter : {"$SYS/#", "$share/g/$SYS/x"}) {
    EXPECT_EQ(Refusal(filter), "KubeMQ has no $ topics besides $share and $reply") << filter;
  }
  EXPECT_EQ(Refusal("$reply/me/#"), "");
  for (const char* filter : {"$reply/other/#", "$reply/me", "$reply/+/x"}) {
    EXPECT_EQ(Refusal(filter),
              "$reply/<client id>/... is the reply namespace of the client it names")
        << filter;
  }
}

TEST(KubemqStrictSubscribe, DefaultPatternNoneRefusesUnprefixed) {
  EXPECT_NE(Refusal("site1/temp", 1, 5, DefaultPattern::kNone).find("default_pattern is none"),
            std::string::npos);
  EXPECT_EQ(Refusal("events/site1", 1, 5, DefaultPattern::kNone), "");
}

TEST(KubemqStrictPublish, Verdicts) {
  EXPECT_EQ(Publish("events/a"), KubemqPublishVerdict::kAccept);
  EXPECT_EQ(Publish("store/a/b"), KubemqPublishVerdict::kAccept);
  EXPECT_EQ(Publish("queues/jobs"), KubemqPublishVerdict::kAccept);
  EXPECT_EQ(Publish("site1/temp"), KubemqPublishVerdict::kAccept);
  EXPECT_EQ(Publish("site1/temp", DefaultPattern::kNone), KubemqPublishVerdict::kRefuse);
  EXPECT_EQ(Publish("commands/svc"), KubemqPublishVerdict::kAcceptIfRpcRequest);
  EXPECT_EQ(Publish("queries/svc"), KubemqPublishVerdict::kAcceptIfRpcRequest);
  EXPECT_EQ(Publish("$reply/requester/1"), KubemqPublishVerdict::kAccept);
  EXPECT_EQ(Publish("$other/x"), KubemqPublishVerdict::kRefuse);
  for (const char* topic :
       {"events//x", "events/x/", "/events/x", "events", "store", "queues/", "commands//x", ""}) {
    SCOPED_TRACE(topic);
    EXPECT_EQ(Publish(topic), KubemqPublishVerdict::kRefuse);
  }
}

TEST(KubemqStrictPublish, RpcRequestsNeedMqtt5AndAResponseTopic) {
  EXPECT_TRUE(KubemqAcceptsRpcRequest(5, true));
  EXPECT_FALSE(KubemqAcceptsRpcRequest(5, false));
  EXPECT_FALSE(KubemqAcceptsRpcRequest(4, true));
  EXPECT_FALSE(KubemqAcceptsRpcRequest(3, false));
}

}  // namespace
