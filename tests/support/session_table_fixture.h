// SPDX-License-Identifier: BSD-3-Clause
// The session table's tests' fixture (tests/broker/session_table_test.cc,
// connect_settlement_test.cc, resync_writer_test.cc): a sink that keeps every event as a short
// line, and a table with its settlement and resync writer.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "broker/connect_settlement.h"
#include "broker/resync_writer.h"
#include "broker/session_table.h"
#include "client_facts_builder.h"

namespace mqc {

constexpr std::int64_t kSecond = 1000000000;

// Keeps every event, and a short line for each, so that tests read like the event stream.
class RecordingSink : public EventSink {
 public:
  bool Emit(const ConnectionEvent& e) override {
    if (!Take()) return false;
    connections.push_back(e);
    lines.push_back((e.close_time_ns != 0 ? "refused " : "open ") + std::to_string(e.seq) + " " +
                    e.client_id);
    return true;
  }
  bool Emit(const CloseEvent& e) override {
    if (!Take()) return false;
    closes.push_back(e);
    lines.push_back("close " + std::to_string(e.seq) + " reason " +
                    std::to_string(static_cast<int>(e.reason)));
    return true;
  }
  bool Emit(EventType type, const SubscriptionEvent& e) override {
    if (!Take()) return false;
    EXPECT_TRUE(type == EventType::kSubscribe || type == EventType::kUnsubscribe);
    lines.push_back(std::string(type == EventType::kSubscribe ? "sub " : "unsub ") +
                    std::to_string(e.seq) + " " + e.filter + " " + std::to_string(e.qos));
    return true;
  }
  bool Emit(const OfflineSessionEvent& e) override {
    if (!Take()) return false;
    offline.push_back(e);
    lines.push_back("offline " + std::to_string(e.seq) + " " + e.client_id);
    return true;
  }
  bool Emit(const OfflineSessionEndEvent& e) override {
    if (!Take()) return false;
    lines.push_back("offline-end " + std::to_string(e.seq));
    return true;
  }
  bool Emit(EventType type, const ResyncEvent& e) override {
    if (!Take()) return false;
    EXPECT_TRUE(type == EventType::kResyncBegin || type == EventType::kResyncEnd);
    lines.push_back(std::string(type == EventType::kResyncBegin ? "begin " : "end ") +
                    std::to_string(e.generation));
    return true;
  }
  bool Emit(const SettingsEvent&) override {
    if (!Take()) return false;
    lines.push_back("settings");
    return true;
  }
  bool Emit(const BridgeEvent& e) override {
    if (!Take()) return false;
    lines.push_back("bridge " + std::to_string(e.seq) + " " +
                    std::to_string(static_cast<int>(e.role)));
    return true;
  }
  bool Fits(const ConnectionEvent&, const SubscriptionList& subscriptions) override {
    return FitsRecords(1 + subscriptions.size());
  }
  bool Fits(const OfflineSessionEvent&, const SubscriptionList& subscriptions) override {
    return FitsRecords(1 + subscriptions.size());
  }
  bool Fits(const ResyncEvent&) override { return FitsRecords(1); }
  void RefuseAfter(int count) { refuse_after_ = count; }
  void SetRoom(int records) { room_ = records; }

  std::vector<std::string> lines;
  std::vector<ConnectionEvent> connections;
  std::vector<CloseEvent> closes;
  std::vector<OfflineSessionEvent> offline;

 private:
  // Whether one more record is taken (false once RefuseAfter's count is reached).
  bool Take() {
    if (refuse_after_ >= 0 && static_cast<int>(lines.size()) >= refuse_after_) return false;
    if (room_ > 0) --room_;
    return true;
  }
  bool FitsRecords(std::size_t records) const {
    return room_ < 0 || static_cast<int>(records) <= room_;
  }

  int refuse_after_ = -1;
  int room_ = -1;  // records that fit at a time; -1: unlimited
};

// One filter a kick re-checks, and whether the broker allows it.
struct Recheck {
  const char* filter;
  bool allowed;
};

class SessionTableTest : public ::testing::Test {
 protected:
  // `client` connects with `facts` at `now_ns`, is announced (the next callback settles it), and
  // subscribes to each (filter, QoS) in order.
  void Open(const void* client, const ClientFacts& facts, std::int64_t now_ns,
            const std::vector<std::pair<const char*, int>>& subscriptions = {}) {
    connects_.BeginConnect(client, facts, now_ns);
    connects_.Settle();
    for (const auto& [filter, qos] : subscriptions) {
      connects_.Subscribe(client, filter, static_cast<std::uint8_t>(qos));
    }
  }

  // A kick of a persistent `client` as Mosquitto 2.0.12+ (and Debian's 2.0.11) does it: each
  // filter re-checked as a SUBSCRIBE with QoS 0 (or denied), other clients' events settling in
  // between, then the client's DISCONNECT.
  void Kick(const void* client, const std::vector<Recheck>& rechecks, std::int64_t now_ns) {
    for (const Recheck& recheck : rechecks) {
      connects_.SettleExceptHeldOf(client);
      if (recheck.allowed) {
        connects_.Subscribe(client, recheck.filter, 0);
      } else {
        connects_.SubscribeDenied(client, recheck.filter, now_ns);
      }
    }
    connects_.Disconnect(client, true, CloseReason::kKicked, now_ns);
  }

  // Distinct addresses standing in for the broker's client pointers.
  const void* const a_ = &slots_[0];
  const void* const b_ = &slots_[1];
  const void* const c_ = &slots_[2];
  const void* const d_ = &slots_[3];
  int slots_[4] = {};
  RecordingSink sink_;
  SessionTable table_{&sink_, 42};
  ConnectSettlement connects_{&table_};
  ResyncWriter resync_{&table_, &sink_};
};

// What 2.1's CLIENT_OFFLINE tells without a verified layout: the session outlives its
// connection, how long unknown.
inline SessionExpiry Outlives() {
  SessionExpiry expiry;
  expiry.known = SessionExpiry::Known::kOutlives;
  return expiry;
}

// As the persistence file reader returns them for tests/data/mosquitto-2.0.11.db.
inline std::vector<PersistedSession> Restored() {
  PersistedSession v4;
  v4.client_id = "db-v4";
  v4.username = "alice";
  v4.session_expiry_interval = 0xffffffff;
  v4.subscriptions = {{"events/a/#", 1, 0, 0}, {"queues/jobs", 2, 0, 0}};
  PersistedSession v5;
  v5.client_id = "db-v5";
  v5.session_expiry_interval = 3600;
  v5.session_expiry_time = 1796093116;
  v5.subscriptions = {{"commands/door", 0, 7, 0}};
  return {v4, v5};
}

}  // namespace mqc
