// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/history_view.h"

#include <cjson/cJSON.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "companion/http/connect_codec.h"
#include "companion/http/connect_protocol.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/disconnect_view.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"
#include "companion/json_writer.h"
#include "companion/query/connection_fields.h"
#include "link/text_util.h"

namespace mqc {
namespace {

// The JSON request message: clientId, a string.
Status ReadClientIdJson(std::string_view body, std::string* client_id) {
  const StatusOr<CjsonPtr> message = ParseBodyObject(body);
  if (!message.ok()) return message.status();
  const cJSON* value = cJSON_GetObjectItemCaseSensitive(message->get(), "clientId");
  if (value == nullptr || cJSON_IsNull(value)) return Status();
  if (!cJSON_IsString(value)) {
    return Status(StatusCode::kInvalidArgument, "field 'clientId' must be a string");
  }
  *client_id = value->valuestring;
  return Status();
}

// The kind's name as the .proto spells it ("CLIENT_EVENT_KIND_CONNECTED"): the binary answer sends
// the same number, so the two codecs cannot disagree. Read from the descriptor once (a lookup
// there costs some 150 instructions a name); a number the .proto does not list reads as
// UNSPECIFIED.
std::string_view KindName(ClientEventKind kind) {
  constexpr int kCount = connections_v1::ClientEventKind_ARRAYSIZE;
  static const std::array<std::string_view, kCount> kNames = [] {
    std::array<std::string_view, kCount> names;
    for (int n = 0; n < kCount; ++n) {
      const bool listed = connections_v1::ClientEventKind_IsValid(n);
      names[n] = connections_v1::ClientEventKind_Name(
          listed ? n : connections_v1::CLIENT_EVENT_KIND_UNSPECIFIED);
    }
    return names;
  }();
  const auto number = static_cast<std::size_t>(kind);
  return number < kNames.size() ? kNames[number]
                                : kNames[connections_v1::CLIENT_EVENT_KIND_UNSPECIFIED];
}

void WriteEvent(const ClientEvent& event, JsonWriter* json) {
  static const FieldDef* const kCloseReasonField = FindField("close_reason");
  json->BeginObject();
  json->Key("time").String(FormatRfc3339Nanos(event.time_ns));
  json->Key("kind").String(KindName(event.kind));
  // Every closing kind names its reason, CLOSE_REASON_UNSPECIFIED included, as a closed
  // connection's closeReason does (a broker that cannot tell it: README, Supported brokers).
  if (ClosesAConnection(event.kind)) {
    json->Key("closeReason").String(
        ResponseEnumName(*kCloseReasonField, static_cast<std::int64_t>(event.close_reason)));
  }
  json->Key("uid").String(event.uid);
  if (!event.ip_address.empty()) json->Key("ipAddress").String(event.ip_address);
  if (event.port != 0) json->Key("port").Int(event.port);
  if (!event.username.empty()) json->Key("username").String(event.username);
  if (event.protocol_version != 0) json->Key("protocolVersion").Int(event.protocol_version);
  if (event.count != 0) json->Key("count").Int(event.count);
  if (!event.filter.empty()) json->Key("filter").String(event.filter);
  json->EndObject();
}

}  // namespace

HttpResponse ConnectRpcGetClientHistory(const ClientHistory& history, const HttpRequest& request) {
  HttpResponse error;
  ConnectCodec codec = ConnectCodec::kJson;
  if (!CheckConnectUnaryPost(request, &codec, &error)) return error;
  std::string client_id;
  const Status read =
      codec == ConnectCodec::kProto
          ? DecodeGetClientHistoryRequestProto(request.body, "request body", &client_id)
          : ReadClientIdJson(request.body, &client_id);
  if (!read.ok()) return ConnectRpcErrorResponse(read);
  if (client_id.empty()) {
    return ConnectRpcErrorResponse(
        Status(StatusCode::kInvalidArgument, "'clientId' is required"));
  }
  const Status valid = CheckClientId(client_id);
  if (!valid.ok()) return ConnectRpcErrorResponse(valid);
  if (!history.enabled()) {
    return ConnectRpcErrorResponse(Status(StatusCode::kPermissionDenied, kHistoryOff));
  }
  std::vector<ClientEvent> events;
  std::uint64_t dropped = 0;
  if (!history.Find(client_id, &events, &dropped)) {
    return ConnectRpcErrorResponse(Status(
        StatusCode::kNotFound,
        "no event kept for client id " + QuoteForMessage(client_id) +
            " (kept: since the companion started, the last " +
            std::to_string(history.options().per_client) + " per client id, " +
            std::to_string(history.options().max_events) + " in all)"));
  }
  return ConnectRpcAnswer(
      codec, [&] { return EncodeGetClientHistoryResponseProto(client_id, events, dropped); },
      [&](JsonWriter* json) {
        json->Key("clientId").String(client_id);
        json->Key("events").BeginArray();
        for (const ClientEvent& event : events) WriteEvent(event, json);
        json->EndArray();
        // int64: a string in protobuf's JSON mapping; left out at zero, as proto3 JSON does.
        if (dropped != 0) json->Key("droppedEvents").String(std::to_string(dropped));
      });
}

}  // namespace mqc
