// SPDX-License-Identifier: BSD-3-Clause
// The disconnect views (see disconnect_view.h).
//
// Where the spec is silent:
// - A client id is 1 to 65535 bytes without NUL (MQTT's limit; the broker looks it up as a C
//   string); a uid is a UUID text. Anything else is 400 / `invalid_argument`.
// - A request message with both clientId and uid, or neither, is `invalid_argument`; unknown
//   fields are ignored (protobuf JSON).
// - A client the broker does not close within the Disconnector's wait is 504 /
//   `deadline_exceeded`: it may still close later.
#include "companion/http/disconnect_view.h"

#include <cjson/cJSON.h>

#include <cstdint>
#include <string>
#include <utility>

#include "companion/http/connect_codec.h"
#include "companion/http/connect_protocol.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"
#include "companion/json_writer.h"

namespace mqc {

Status CheckClientId(std::string_view client_id) {
  constexpr std::size_t kMaxClientIdBytes = 65535;
  if (client_id.empty() || client_id.size() > kMaxClientIdBytes ||
      client_id.find('\0') != std::string_view::npos) {
    return Status(
        StatusCode::kInvalidArgument,
        "client id must be 1 to 65535 bytes without NUL, got " + QuoteForMessage(client_id));
  }
  return Status();
}

namespace {

int HttpStatusOf(StatusCode code) {
  return code == StatusCode::kInvalidArgument ? kHttpBadRequest : ConnectRpcHttpStatus(code);
}

// The JSON request message: clientId and uid as strings, preventWill as a boolean (null or
// absent: not given).
Status ReadDisconnectRequestJson(std::string_view body, DisconnectTarget* target) {
  const StatusOr<CjsonPtr> message = ParseBodyObject(body);
  if (!message.ok()) return message.status();
  for (const auto& [field, into] :
       {std::pair<const char*, std::string*>{"clientId", &target->client_id},
        std::pair<const char*, std::string*>{"uid", &target->uid}}) {
    const cJSON* value = cJSON_GetObjectItemCaseSensitive(message->get(), field);
    if (value == nullptr || cJSON_IsNull(value)) continue;
    if (!cJSON_IsString(value)) {
      return Status(StatusCode::kInvalidArgument,
                    std::string("field '") + field + "' must be a string");
    }
    *into = value->valuestring;
  }
  const cJSON* prevent_will = cJSON_GetObjectItemCaseSensitive(message->get(), "preventWill");
  if (prevent_will != nullptr && !cJSON_IsNull(prevent_will)) {
    if (!cJSON_IsBool(prevent_will)) {
      return Status(StatusCode::kInvalidArgument, "field 'preventWill' must be true or false");
    }
    target->prevent_will = cJSON_IsTrue(prevent_will);
  }
  const cJSON* node = cJSON_GetObjectItemCaseSensitive(message->get(), "nodeId");
  if (node != nullptr && !cJSON_IsNull(node)) {
    if (!cJSON_IsNumber(node) || node->valuedouble < 0 || node->valuedouble > 4294967295.0 ||
        node->valuedouble != static_cast<double>(static_cast<std::uint32_t>(node->valuedouble))) {
      return Status(StatusCode::kInvalidArgument,
                    "field 'nodeId' must be a uint32 (a number from 0 to 4294967295)");
    }
    target->node_id = static_cast<std::uint32_t>(node->valuedouble);
  }
  return Status();
}

}  // namespace

HttpResponse KubeMqDisconnect(const Disconnector& disconnector, std::string_view client_id,
                              const Caller& caller) {
  const Status valid = CheckClientId(client_id);
  if (!valid.ok()) return KubeMqErrorResponse(kHttpBadRequest, valid.message());
  DisconnectTarget target;
  target.client_id = std::string(client_id);
  const DisconnectOutcome outcome = disconnector(target, caller);
  if (!outcome.status.ok()) {
    return KubeMqErrorResponse(HttpStatusOf(outcome.status.code()), outcome.status.message());
  }
  return KubeMqOkResponse([&outcome](JsonWriter* json) {
    json->Key("client_id").String(outcome.client_id);
    json->Key("disconnected").Bool(true);
  });
}

HttpResponse ConnectRpcDisconnect(const Disconnector& disconnector, const HttpRequest& request,
                                  const Caller& caller) {
  HttpResponse error;
  ConnectCodec codec = ConnectCodec::kJson;
  if (!CheckConnectUnaryPost(request, &codec, &error)) return error;
  DisconnectTarget target;
  const Status read =
      codec == ConnectCodec::kProto
          ? DecodeDisconnectConnectionRequestProto(request.body, "request body", &target.client_id,
                                                   &target.uid, &target.prevent_will,
                                                   &target.node_id)
          : ReadDisconnectRequestJson(request.body, &target);
  if (!read.ok()) return ConnectRpcErrorResponse(read);
  if (target.client_id.empty() == target.uid.empty()) {
    return ConnectRpcErrorResponse(
        Status(StatusCode::kInvalidArgument, "give exactly one of 'clientId' and 'uid'"));
  }
  if (!target.client_id.empty()) {
    const Status valid = CheckClientId(target.client_id);
    if (!valid.ok()) return ConnectRpcErrorResponse(valid);
  }
  Caller forwarding = caller;
  if (const std::string* authorization = request.FindHeader("Authorization")) {
    forwarding.authorization = *authorization;
  }
  const DisconnectOutcome outcome = disconnector(target, forwarding);
  if (!outcome.status.ok()) return ConnectRpcErrorResponse(outcome.status);
  return ConnectRpcAnswer(
      codec,
      [&] { return EncodeDisconnectConnectionResponseProto(outcome.client_id, outcome.uid, true); },
      [&](JsonWriter* json) {
        json->Key("clientId").String(outcome.client_id);
        json->Key("uid").String(outcome.uid);
        json->Key("disconnected").Bool(true);
      });
}

}  // namespace mqc
