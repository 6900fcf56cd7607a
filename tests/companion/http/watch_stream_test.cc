// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/watch_stream.h"

#include <cjson/cJSON.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../../support/fake_live.h"
#include "companion/json_util.h"

namespace mqc {
namespace {

using ::testing::ElementsAre;

ConnectionPtr Open(const std::string& client_id) {
  auto connection = std::make_shared<Connection>();
  connection->client_id = client_id;
  connection->state = ConnectionState::kOpen;
  return connection;
}

struct Message {
  int flags = 0;
  std::string kind;
  std::string sequence;
  std::string client_id;
  std::string error_code;
};

// Splits JSON-codec envelopes.
std::vector<Message> Parse(const std::string& bytes) {
  std::vector<Message> messages;
  std::size_t at = 0;
  while (at + 5 <= bytes.size()) {
    Message message;
    message.flags = static_cast<unsigned char>(bytes[at]);
    const std::size_t size = (std::size_t{static_cast<unsigned char>(bytes[at + 1])} << 24) |
                             (std::size_t{static_cast<unsigned char>(bytes[at + 2])} << 16) |
                             (std::size_t{static_cast<unsigned char>(bytes[at + 3])} << 8) |
                             std::size_t{static_cast<unsigned char>(bytes[at + 4])};
    const CjsonPtr json = ParseJson(bytes.substr(at + 5, size));
    EXPECT_TRUE(json != nullptr);
    if (json == nullptr) break;
    const auto text = [](const cJSON* item) {
      return cJSON_IsString(item) ? std::string(item->valuestring) : std::string();
    };
    message.kind = text(cJSON_GetObjectItem(json.get(), "kind"));
    message.sequence = text(cJSON_GetObjectItem(json.get(), "sequence"));
    const cJSON* connection = cJSON_GetObjectItem(json.get(), "connection");
    if (connection != nullptr)
      message.client_id = text(cJSON_GetObjectItem(connection, "clientId"));
    const cJSON* error = cJSON_GetObjectItem(json.get(), "error");
    if (error != nullptr) message.error_code = text(cJSON_GetObjectItem(error, "code"));
    messages.push_back(message);
    at += 5 + size;
  }
  EXPECT_EQ(at, bytes.size());
  return messages;
}

// One field of every message, in order.
std::vector<std::string> Each(const std::vector<Message>& messages, std::string Message::*field) {
  std::vector<std::string> values;
  for (const Message& message : messages) values.push_back(message.*field);
  return values;
}

class WatchStreamTest : public ::testing::Test {
 protected:
  std::unique_ptr<WatchStream> Start(const std::string& filter = "", std::uint64_t resume = 0,
                                     std::size_t buffer = 1024) {
    WatchStreamOptions options;
    EXPECT_TRUE(ConnectionFilter::Parse(filter, &options.filter).ok());
    options.resume_after = resume;
    options.buffer = buffer;
    auto stream = std::make_unique<WatchStream>(live_, &changes_, std::move(options), nullptr);
    stream->SetWake([this] { ++woken_; });
    return stream;
  }
  void Publish(ChangeKind kind, ConnectionPtr before, ConnectionPtr after) {
    ConnectionChange change;
    change.kind = kind;
    change.before = std::move(before);
    change.after = std::move(after);
    changes_.Publish(std::move(change));
  }
  std::vector<Message> ReadAll(WatchStream* stream, HttpBodyStream::Pull* last = nullptr) {
    std::string bytes;
    HttpBodyStream::Pull pull = HttpBodyStream::Pull::kData;
    for (int i = 0; i < 100 && pull == HttpBodyStream::Pull::kData; ++i) {
      pull = stream->Read(64, &bytes);
    }
    if (last != nullptr) *last = pull;
    return Parse(bytes);
  }

  ConnectionChanges changes_{{16, 500}};
  FakeLive live_{changes_};
  int woken_ = 0;
};

TEST_F(WatchStreamTest, StateFirstThenMatchingChangesInOrder) {
  live_.connections = {Open("a"), Open("b")};
  auto stream = Start(R"(client_id = "a*")");
  HttpBodyStream::Pull last;
  std::vector<Message> messages = ReadAll(stream.get(), &last);
  EXPECT_EQ(last, HttpBodyStream::Pull::kWait);
  ASSERT_THAT(Each(messages, &Message::kind),
              ElementsAre("CONNECTION_CHANGE_KIND_RESET", "CONNECTION_CHANGE_KIND_CURRENT",
                          "CONNECTION_CHANGE_KIND_SYNCED"));
  EXPECT_EQ(messages[0].sequence, "500");
  EXPECT_EQ(messages[1].client_id, "a");

  Publish(ChangeKind::kOpened, nullptr, Open("b2"));  // 501, filtered out
  Publish(ChangeKind::kOpened, nullptr, Open("a2"));  // 502
  auto closed = std::make_shared<Connection>(*Open("a2"));
  closed->state = ConnectionState::kClosed;
  Publish(ChangeKind::kClosed, Open("a2"), closed);  // 503
  messages = ReadAll(stream.get());
  EXPECT_THAT(Each(messages, &Message::kind),
              ElementsAre("CONNECTION_CHANGE_KIND_OPENED", "CONNECTION_CHANGE_KIND_CLOSED"));
  EXPECT_THAT(Each(messages, &Message::sequence), ElementsAre("502", "503"));
}

TEST_F(WatchStreamTest, AFilterSeesAChangeThatEndsTheMatch) {
  auto stream = Start("state = MQTT_CONNECTION_STATE_OPEN");
  ReadAll(stream.get());
  auto closed = std::make_shared<Connection>(*Open("a"));
  closed->state = ConnectionState::kClosed;
  Publish(ChangeKind::kClosed, Open("a"), closed);
  const std::vector<Message> messages = ReadAll(stream.get());
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].kind, "CONNECTION_CHANGE_KIND_CLOSED");
}

TEST_F(WatchStreamTest, ResumesWhereItCanAndStartsAfreshWhereItCannot) {
  Publish(ChangeKind::kOpened, nullptr, Open("a"));  // 501
  Publish(ChangeKind::kOpened, nullptr, Open("b"));  // 502
  std::vector<Message> messages = ReadAll(Start("", 501).get());
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].client_id, "b");

  live_.connections = {Open("a"), Open("b")};
  messages = ReadAll(Start("", 42).get());  // an earlier companion's number
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0].kind, "CONNECTION_CHANGE_KIND_RESET");
  EXPECT_EQ(messages[0].sequence, "502");

  messages = ReadAll(Start("", 9999).get());  // from the future
  EXPECT_EQ(messages[0].kind, "CONNECTION_CHANGE_KIND_RESET");
}

TEST_F(WatchStreamTest, AResetMidStreamSendsAFreshState) {
  auto stream = Start();
  ReadAll(stream.get());
  live_.connections = {Open("after-resync")};
  Publish(ChangeKind::kReset, nullptr, nullptr);
  const std::vector<Message> messages = ReadAll(stream.get());
  ASSERT_THAT(Each(messages, &Message::kind),
              ElementsAre("CONNECTION_CHANGE_KIND_RESET", "CONNECTION_CHANGE_KIND_CURRENT",
                          "CONNECTION_CHANGE_KIND_SYNCED"));
  EXPECT_EQ(messages[1].client_id, "after-resync");
}

TEST_F(WatchStreamTest, ASlowReaderIsCutOffWithResourceExhausted) {
  auto stream = Start("", 0, 4);
  ReadAll(stream.get());
  for (int i = 0; i < 5; ++i) Publish(ChangeKind::kOpened, nullptr, Open("x"));
  HttpBodyStream::Pull last;
  const std::vector<Message> messages = ReadAll(stream.get(), &last);
  EXPECT_EQ(last, HttpBodyStream::Pull::kEnd);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].flags, 2);
  EXPECT_EQ(messages[0].error_code, "resource_exhausted");
}

// A stream whose filter matches none of a burst of changes is not behind on anything its
// client has to read: the burst, however long, does not cut it off (the server may be woken
// late, after the whole burst), and the next change it matches reaches it.
TEST_F(WatchStreamTest, ChangesAFilterSkipsNeverCutAStreamOff) {
  auto stream = Start(R"(client_id = "a*")", 0, 4);
  ReadAll(stream.get());
  for (int i = 0; i < 10; ++i) Publish(ChangeKind::kOpened, nullptr, Open("x"));
  HttpBodyStream::Pull last;
  EXPECT_TRUE(ReadAll(stream.get(), &last).empty());
  EXPECT_EQ(last, HttpBodyStream::Pull::kWait);
  Publish(ChangeKind::kOpened, nullptr, Open("a1"));
  const std::vector<Message> messages = ReadAll(stream.get(), &last);
  EXPECT_EQ(last, HttpBodyStream::Pull::kWait);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].client_id, "a1");
  // Matching changes left unread beyond the buffer still cut it off.
  for (int i = 0; i < 5; ++i) Publish(ChangeKind::kOpened, nullptr, Open("a2"));
  EXPECT_EQ(ReadAll(stream.get(), &last).back().error_code, "resource_exhausted");
  EXPECT_EQ(last, HttpBodyStream::Pull::kEnd);
}

TEST_F(WatchStreamTest, StopEndsWithUnavailableAndWaitsForTheFirstSync) {
  live_.is_synced = false;
  auto stream = Start();
  std::string bytes;
  EXPECT_EQ(stream->Read(64, &bytes), HttpBodyStream::Pull::kWait);
  EXPECT_TRUE(bytes.empty());
  stream->Stop();
  HttpBodyStream::Pull last;
  const std::vector<Message> messages = ReadAll(stream.get(), &last);
  EXPECT_EQ(last, HttpBodyStream::Pull::kEnd);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].error_code, "unavailable");
}

TEST_F(WatchStreamTest, WaitersAreWokenAndSlotsAreBounded) {
  auto stream = Start();
  Publish(ChangeKind::kOpened, nullptr, Open("a"));
  changes_.WakeWaiters();
  EXPECT_EQ(woken_, 1);
  WatchSlots slots(1);
  auto first = slots.TryTake();
  EXPECT_NE(first, nullptr);
  EXPECT_EQ(slots.TryTake(), nullptr);
  first.reset();
  EXPECT_NE(slots.TryTake(), nullptr);
}

}  // namespace
}  // namespace mqc
