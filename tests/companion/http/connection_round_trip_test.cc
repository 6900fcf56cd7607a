// SPDX-License-Identifier: BSD-3-Clause
// A peer's binary answer read back (ConnectionFromProto, expanded from the field table's decode
// column) and written again gives the same bytes, and the same JSON, as the connection it came
// from: for the fully set connection in each state, and for it with each field the table
// carries under a rule (`present` not always true, or a proto3 `optional`) left out. A field the
// decoder does not read, or reads under another rule than the encoders write it, fails here.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "../../support/connection_builder.h"
#include "companion/connection.h"
#include "companion/connection_field_table.h"
#include "companion/http/connect_rpc_json.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/query/connection_query.h"

namespace mqc {
namespace {

constexpr ConnectionState kStates[] = {ConnectionState::kOpen, ConnectionState::kClosed,
                                       ConnectionState::kOffline, ConnectionState::kUnspecified};

// One change of the fully set connection: most leave fields out, "clean session" sets the one
// it leaves at its zero.
struct Variant {
  std::string what;
  std::function<void(Connection&)> change;
};

std::vector<Variant> Variants() {
  return {
      {"as it is", [](Connection&) {}},
      {"no close time", [](Connection& c) { c.close_time_ns = 0; }},
      {"no session expiry", [](Connection& c) { c.session_expiry_time_ns = 0; }},
      {"close reason unspecified", [](Connection& c) { c.close_reason = CloseReason{}; }},
      {"no username", [](Connection& c) { c.username.clear(); }},
      {"clean session", [](Connection& c) { c.clean_session = true; }},
      {"no proxy",
       [](Connection& c) {
         c.proxy_address.reset();
         c.proxy_port = 0;
       }},
      {"no listener name", [](Connection& c) { c.listener_name.clear(); }},
      {"no TLS", [](Connection& c) { c.tls = TlsInfo(); }},
      {"no subscriptions", [](Connection& c) { c.subscriptions.clear(); }},
      {"idle unknown", [](Connection& c) { c.idle_ns = -1; }},
      {"no network info", [](Connection& c) { c.network = NetworkInfo(); }},
      {"network info without last receive and send",
       [](Connection& c) {
         c.network->since_last_receive_ns = -1;
         c.network->since_last_send_ns = -1;
       }},
      {"bridge role unknown", [](Connection& c) { c.bridge = BridgeRole::kUnknown; }},
      {"not a bridge", [](Connection& c) { c.bridge = BridgeRole::kNone; }},
      {"no bridge name", [](Connection& c) { c.bridge_name.reset(); }},
      {"will unknown", [](Connection& c) { c.will = WillState::kUnknown; }},
      {"no will", [](Connection& c) { c.will = WillState::kNone; }},
      {"outgoing counts unknown", [](Connection& c) { c.messages->out = MessageQueue(); }},
      {"outgoing counts as a total",
       [](Connection& c) {
         c.messages->out = {MessageQueue::Known::kTotal, 0, 0, 9};
       }},
      {"incoming counts unknown", [](Connection& c) { c.messages->in = MessageQueue(); }},
      {"incoming counts split",
       [](Connection& c) {
         c.messages->in = {MessageQueue::Known::kSplit, 0, 6, 6};
       }},
      {"drops hidden", [](Connection& c) { c.drops = MessageDrops(); }},
      {"no drops",
       [](Connection& c) {
         c.drops = {true, 0};
       }},
      {"not a duplicate client id", [](Connection& c) { c.duplicate_client_id = false; }},
      {"not flapping", [](Connection& c) { c.flapping = FlappingCounts(); }},
      {"one takeover address", [](Connection& c) { c.flapping->addresses[1].clear(); }},
      {"no takeover in the last hour",
       [](Connection& c) {
         c.flapping->takeovers_last_minute = c.flapping->takeovers_last_hour = 0;
       }},
      {"denials hidden", [](Connection& c) { c.denials = Denials(); }},
      {"no denial yet",
       [](Connection& c) {
         c.denials = {true, 0, 0, "", 0};
       }},
      {"denials counted, none last", [](Connection& c) { c.denials->last_ns = 0; }},
  };
}

std::string Binary(const Connection& connection) {
  connections_v1::Connection message;
  ConnectionToProto(connection, &message);
  return message.SerializeAsString();
}

std::string Json(const Connection& connection) {
  ConnectionPage page;
  page.connections = {connection};
  return ListConnectionsResponseJson(page);
}

// The fields `bytes` carries, by name.
std::set<std::string> FieldsOn(const std::string& bytes) {
  connections_v1::Connection message;
  EXPECT_TRUE(message.ParseFromString(bytes));
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  std::set<std::string> names;
  for (const google::protobuf::FieldDescriptor* field : fields) names.insert(field->name());
  return names;
}

// The table's fields carried under a rule: a `present` other than `true`, or an `optional` one.
std::set<std::string> FieldsUnderARule() {
  std::set<std::string> names;
#define MQC_FIELD_UNDER_A_RULE(name, json_name, number, label, proto_type, kind, value, present, \
                               ...)                                                              \
  if (std::string_view(#present) != "true" || std::string_view(#label) == "optional") {          \
    names.insert(#name);                                                                         \
  }
  MQC_CONNECTION_FIELDS(MQC_FIELD_UNDER_A_RULE)
#undef MQC_FIELD_UNDER_A_RULE
  return names;
}

TEST(ConnectionRoundTripTest, EncodeDecodeEncodeIsTheSame) {
  for (const ConnectionState state : kStates) {
    for (const Variant& variant : Variants()) {
      Connection original = EveryFieldConnection(state);
      variant.change(original);
      const std::string bytes = Binary(original);
      const Connection decoded = ConnectionFromProto([&] {
        connections_v1::Connection message;
        EXPECT_TRUE(message.ParseFromString(bytes));
        return message;
      }());
      EXPECT_EQ(Binary(decoded), bytes)
          << variant.what << ", state " << static_cast<int>(state) << ": binary differs";
      EXPECT_EQ(Json(decoded), Json(original))
          << variant.what << ", state " << static_cast<int>(state) << ": JSON differs";
    }
  }
}

// The connections above put every field of the schema on the wire, and leave out each field
// carried under a rule: so that no field escapes the round trip.
TEST(ConnectionRoundTripTest, EveryFieldIsCarriedAndEachRuledFieldLeftOut) {
  std::set<std::string> carried;
  std::set<std::string> left_out;
  std::set<std::string> carried_by_all;
  bool first = true;
  for (const ConnectionState state : kStates) {
    for (const Variant& variant : Variants()) {
      Connection connection = EveryFieldConnection(state);
      variant.change(connection);
      const std::set<std::string> on = FieldsOn(Binary(connection));
      carried.insert(on.begin(), on.end());
      if (first) carried_by_all = on;
      first = false;
      std::set<std::string> both;
      for (const std::string& name : carried_by_all) {
        if (on.count(name) != 0) both.insert(name);
      }
      carried_by_all = both;
    }
  }
  const google::protobuf::Descriptor& schema = *connections_v1::Connection::descriptor();
  for (int i = 0; i < schema.field_count(); ++i) {
    EXPECT_EQ(carried.count(schema.field(i)->name()), 1u)
        << schema.field(i)->name() << " is carried by none";
  }
  for (const std::string& name : FieldsUnderARule()) {
    EXPECT_EQ(carried_by_all.count(name), 0u) << name << " is left out by none";
  }
}

// The model's empty connection: nothing but the fields always carried.
TEST(ConnectionRoundTripTest, EmptyConnection) {
  const std::string bytes = Binary(Connection());
  connections_v1::Connection message;
  ASSERT_TRUE(message.ParseFromString(bytes));
  const Connection decoded = ConnectionFromProto(message);
  EXPECT_EQ(Binary(decoded), bytes);
  EXPECT_EQ(Json(decoded), Json(Connection()));
}

}  // namespace
}  // namespace mqc
