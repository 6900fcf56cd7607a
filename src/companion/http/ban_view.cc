// SPDX-License-Identifier: BSD-3-Clause
// The ban views (see ban_view.h).
//
// Where EMQX and the spec are silent:
// - `until` (RFC 3339) and `duration_s` (seconds, Connect JSON `durationS`) are each optional,
//   never both; with neither the ban has no end (EMQX 5's "infinity"). An `until` in the past
//   is refused rather than made into a ban that never acts.
// - A new ban on a target already banned replaces the old one (new reason, new until).
// - `by` defaults to the caller's token line; every change is logged with the caller anyway.
// - The ban RPCs serve both codecs: binary protobuf is read into the same fields and checked by
//   the same code (CheckBanRequest); its durationS 0 is "not given", as proto3 cannot tell.
#include "companion/http/ban_view.h"

#include <cjson/cJSON.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "companion/ban_store.h"
#include "companion/http/connect_codec.h"
#include "companion/http/connect_protocol.h"
#include "companion/http/connect_rpc_json.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"
#include "companion/json_writer.h"
#include "link/text_util.h"

namespace mqc {
namespace {

constexpr std::int64_t kMaxDurationS = std::int64_t{10} * 366 * 24 * 3600;

int HttpStatusOf(StatusCode code) {
  return code == StatusCode::kInvalidArgument ? kHttpBadRequest : ConnectRpcHttpStatus(code);
}

Status ReadString(const cJSON* object, const char* field, std::string* out, bool* present) {
  const cJSON* value = cJSON_GetObjectItemCaseSensitive(object, field);
  *present = false;
  if (value == nullptr || cJSON_IsNull(value)) return Status();
  if (!cJSON_IsString(value)) return InvalidArgument(std::string(field) + ": must be a string");
  *out = value->valuestring;
  *present = true;
  return Status();
}

Status CheckText(const char* field, const std::string& text) {
  if (text.size() > kMaxBanTextBytes) {
    return InvalidArgument(std::string(field) + ": at most " + std::to_string(kMaxBanTextBytes) +
                           " bytes");
  }
  return Status();
}

void WriteBanList(const std::vector<Ban>& bans, JsonWriter* json) {
  json->BeginArray();
  for (const Ban& ban : bans) {
    json->BeginObject();
    WriteBanMembers(ban, json);
    json->EndObject();
  }
  json->EndArray();
}

// A ban of a Connect answer: the file's members and the broker that holds it.
void WriteNodeBan(const NodeBan& ban, JsonWriter* json) {
  json->BeginObject();
  WriteBanMembers(ban.ban, json);
  json->Key("nodeId").Int(ban.node_id);
  json->EndObject();
}

void WritePeerError(const BrokerBanOutcome& broker, JsonWriter* json) {
  json->BeginObject();
  json->Key("peer").String(broker.peer);
  json->Key("code").String(ConnectRpcCodeName(broker.status.code()));
  json->Key("message").String(broker.status.message());
  json->EndObject();
}

// `brokers` and `peerErrors` of a routed or fleet change; nothing for a change made here alone.
void WriteBrokerOutcomes(const std::vector<BrokerBanOutcome>& brokers, JsonWriter* json) {
  if (brokers.empty()) return;
  json->Key("brokers").BeginArray();
  bool failed = false;
  for (const BrokerBanOutcome& broker : brokers) {
    json->BeginObject();
    json->Key("nodeId").Int(broker.node_id);
    if (!broker.peer.empty()) json->Key("peer").String(broker.peer);
    if (!broker.status.ok()) {
      json->Key("code").String(ConnectRpcCodeName(broker.status.code()));
      json->Key("message").String(broker.status.message());
      failed = failed || !broker.peer.empty();
    }
    json->Key("kicked").Int(static_cast<std::int64_t>(broker.kicked));
    json->EndObject();
  }
  json->EndArray();
  if (!failed) return;
  json->Key("peerErrors").BeginArray();
  for (const BrokerBanOutcome& broker : brokers) {
    if (!broker.status.ok() && !broker.peer.empty()) WritePeerError(broker, json);
  }
  json->EndArray();
}

// nodeId and scope of a JSON ban request (BanClient, UnbanClient).
Status ReadPlaceJson(std::string_view body, BanRequestFields* fields) {
  const StatusOr<CjsonPtr> message = ParseBodyObject(body);
  if (!message.ok()) return message.status();
  const cJSON* node = cJSON_GetObjectItemCaseSensitive(message->get(), "nodeId");
  if (node != nullptr && !cJSON_IsNull(node)) {
    if (!cJSON_IsNumber(node) || node->valuedouble < 0 || node->valuedouble > 4294967295.0 ||
        node->valuedouble != static_cast<double>(static_cast<std::uint32_t>(node->valuedouble))) {
      return InvalidArgument("field 'nodeId' must be a uint32 (a number from 0 to 4294967295)");
    }
    fields->node_id = static_cast<std::uint32_t>(node->valuedouble);
  }
  const cJSON* scope = cJSON_GetObjectItemCaseSensitive(message->get(), "scope");
  if (scope != nullptr && !cJSON_IsNull(scope)) {
    StatusOr<ConnectionScope> read = ReadConnectionScope(*scope, "scope");
    if (!read.ok()) return read.status();
    fields->scope = *read;
  }
  return Status();
}

// Where the change goes: kInvalidArgument for both a node id and the fleet.
Status PlaceOf(const BanRequestFields& fields, BanPlace* place) {
  place->fleet = fields.scope == ConnectionScope::kFleet;
  place->node_id = fields.node_id;
  if (place->fleet && place->node_id) {
    return InvalidArgument(
        "nodeId, scope: give a node id or scope CONNECTION_SCOPE_FLEET, not both");
  }
  return Status();
}

// The change where `place` says. Without peers (no add_at), the fleet is this broker alone and
// another node id is not_found.
FleetBanOutcome ChangeAt(const BanAdmin& admin, bool remove, const Ban& ban,
                         const BanPlace& place, const Caller& caller) {
  const bool here_only = !place.fleet && (!place.node_id || *place.node_id == admin.node_id);
  const auto& routed = remove ? admin.remove_at : admin.add_at;
  if (!here_only && routed) return routed(ban, place, caller);
  FleetBanOutcome result;
  result.node_id = admin.node_id;
  if (!here_only && !place.fleet) {
    result.outcome.status =
        Status(StatusCode::kNotFound, "nodeId: node " + std::to_string(*place.node_id) +
                                          " is not this broker (node " +
                                          std::to_string(admin.node_id) +
                                          "), which has no fleet peers (plugin_opt_fleet_peers)");
    return result;
  }
  result.outcome = remove ? admin.remove(ban, caller) : admin.add(ban, caller);
  if (place.fleet) {
    BrokerBanOutcome self;
    self.node_id = admin.node_id;
    self.status = result.outcome.status;
    self.kicked = result.outcome.kicked;
    result.brokers.push_back(std::move(self));
  }
  return result;
}

// The target of a removal from its JSON (`as`, `who`).
Status ReadTarget(std::string_view body, Ban* target) {
  const StatusOr<CjsonPtr> message = ParseBodyObject(body);
  if (!message.ok()) return message.status();
  std::string as;
  std::string who;
  bool present = false;
  Status status = ReadString(message->get(), "as", &as, &present);
  if (status.ok() && !present) status = InvalidArgument("as: required");
  if (status.ok()) status = ReadString(message->get(), "who", &who, &present);
  if (status.ok() && !present) status = InvalidArgument("who: required");
  if (status.ok()) status = ParseBanTarget(as, who, target);
  return status;
}

}  // namespace

Status CheckBanRequest(const BanRequestFields& fields, std::int64_t now_ns, bool connect_names,
                       Ban* ban) {
  Status status = ParseBanTarget(fields.as, fields.who, ban);
  if (!status.ok()) return status;
  ban->by = fields.by;
  ban->reason = fields.reason;
  status = CheckText("by", ban->by);
  if (status.ok()) status = CheckText("reason", ban->reason);
  if (!status.ok()) return status;
  ban->at_ns = now_ns;
  ban->until_ns = 0;
  const char* duration_name = connect_names ? "durationS" : "duration_s";
  if (fields.has_until && fields.has_duration) {
    return InvalidArgument(std::string("until, ") + duration_name + ": give at most one of them");
  }
  if (fields.has_until) {
    if (fields.until_ns <= now_ns) return InvalidArgument("until: must be in the future");
    ban->until_ns = fields.until_ns;
  }
  if (fields.has_duration) {
    if (fields.duration_s < 1 || fields.duration_s > kMaxDurationS) {
      return InvalidArgument(std::string(duration_name) + ": a whole number of seconds, 1 to " +
                             std::to_string(kMaxDurationS));
    }
    ban->until_ns = now_ns + fields.duration_s * 1000000000;
  }
  return Status();
}

Status ReadBanRequest(std::string_view body, std::int64_t now_ns, bool connect_names, Ban* ban) {
  const StatusOr<CjsonPtr> message = ParseBodyObject(body);
  if (!message.ok()) return message.status();
  const cJSON* root = message->get();
  BanRequestFields fields;
  bool present = false;
  Status status = ReadString(root, "as", &fields.as, &present);
  if (!status.ok()) return status;
  if (!present)
    return InvalidArgument("as: required ('clientid', 'username', 'peerhost', 'peerhost_net')");
  status = ReadString(root, "who", &fields.who, &present);
  if (!status.ok()) return status;
  if (!present) return InvalidArgument("who: required");
  status = ReadString(root, "by", &fields.by, &present);
  if (status.ok()) status = ReadString(root, "reason", &fields.reason, &present);
  if (!status.ok()) return status;
  std::string until;
  status = ReadString(root, "until", &until, &fields.has_until);
  if (!status.ok()) return status;
  if (fields.has_until) {
    const StatusOr<std::int64_t> until_ns = ParseTimestamp(until);
    if (!until_ns.ok()) {
      return InvalidArgument("until: " + QuoteForMessage(until) + ": " +
                             until_ns.status().message());
    }
    fields.until_ns = *until_ns;
  }
  const char* duration_name = connect_names ? "durationS" : "duration_s";
  const cJSON* duration = cJSON_GetObjectItemCaseSensitive(root, duration_name);
  fields.has_duration = duration != nullptr && !cJSON_IsNull(duration);
  if (fields.has_duration) {
    // Connect JSON sends an int64 as a string (a number is accepted too).
    double seconds = -1;
    if (cJSON_IsNumber(duration)) {
      seconds = duration->valuedouble;
    } else if (connect_names && cJSON_IsString(duration)) {
      char* end = nullptr;
      seconds = std::strtod(duration->valuestring, &end);
      if (end == duration->valuestring || *end != '\0') seconds = -1;
    }
    if (!(seconds >= 1 && seconds <= static_cast<double>(kMaxDurationS)) ||
        std::floor(seconds) != seconds) {
      return InvalidArgument(std::string(duration_name) + ": a whole number of seconds, 1 to " +
                             std::to_string(kMaxDurationS));
    }
    fields.duration_s = static_cast<std::int64_t>(seconds);
  }
  return CheckBanRequest(fields, now_ns, connect_names, ban);
}

HttpResponse KubeMqListBans(const BanAdmin& admin) {
  const std::vector<Ban> bans = admin.list();
  const std::uint64_t refused_total = admin.refused_total();
  return KubeMqOkResponse([&bans, refused_total](JsonWriter* json) {
    json->Key("bans");
    WriteBanList(bans, json);
    json->Key("count").Int(static_cast<std::int64_t>(bans.size()));
    json->Key("refused_total").Int(static_cast<std::int64_t>(refused_total));
  });
}

HttpResponse KubeMqAddBan(const BanAdmin& admin, const HttpRequest& request, const Caller& caller) {
  Ban ban;
  Status read = ReadBanRequest(request.body, admin.now_ns(), false, &ban);
  // A ban meant for another broker or the fleet must not be made here alone in silence.
  BanRequestFields place;
  if (read.ok()) read = ReadPlaceJson(request.body, &place);
  if (read.ok() && (place.node_id || place.scope != ConnectionScope::kUnspecified)) {
    read = InvalidArgument(
        "nodeId, scope: this path bans on this broker alone; another broker or the fleet is "
        "BanClient's (docs/fleet.md)");
  }
  if (!read.ok()) return KubeMqErrorResponse(kHttpBadRequest, read.message());
  const BanOutcome outcome = admin.add(std::move(ban), caller);
  if (!outcome.status.ok()) {
    return KubeMqErrorResponse(HttpStatusOf(outcome.status.code()), outcome.status.message());
  }
  return KubeMqOkResponse([&outcome](JsonWriter* json) {
    WriteBanMembers(outcome.ban, json);
    json->Key("kicked").Int(static_cast<std::int64_t>(outcome.kicked));
  });
}

HttpResponse KubeMqRemoveBan(const BanAdmin& admin, std::string_view rest, const Caller& caller) {
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 >= rest.size()) {
    return KubeMqErrorResponse(
        kHttpBadRequest, "path: expected /api/mqtt/bans/{as}/{who}, got " + QuoteForMessage(rest));
  }
  Ban target;
  const Status read = ParseBanTarget(rest.substr(0, slash), rest.substr(slash + 1), &target);
  if (!read.ok()) return KubeMqErrorResponse(kHttpBadRequest, read.message());
  const BanOutcome outcome = admin.remove(target, caller);
  if (!outcome.status.ok()) {
    return KubeMqErrorResponse(HttpStatusOf(outcome.status.code()), outcome.status.message());
  }
  return KubeMqOkResponse([&outcome](JsonWriter* json) {
    WriteBanMembers(outcome.ban, json);
    json->Key("removed").Bool(true);
  });
}

HttpResponse ConnectRpcBans(const BanAdmin& admin, std::string_view method,
                            const HttpRequest& request, const Caller& caller) {
  HttpResponse error;
  ConnectCodec codec = ConnectCodec::kJson;
  if (!CheckConnectUnaryPost(request, &codec, &error)) return error;
  const bool proto = codec == ConnectCodec::kProto;
  if (method == kListBansMethod) {
    ConnectionScope scope = ConnectionScope::kUnspecified;
    if (proto) {
      const Status read = DecodeListBansRequestProto(request.body, "request body", &scope);
      if (!read.ok()) return ConnectRpcErrorResponse(read);
    } else {
      const StatusOr<CjsonPtr> message = ParseBodyObject(request.body);
      if (!message.ok()) return ConnectRpcErrorResponse(message.status());
      const cJSON* item = cJSON_GetObjectItemCaseSensitive(message->get(), "scope");
      if (item != nullptr && !cJSON_IsNull(item)) {
        StatusOr<ConnectionScope> read = ReadConnectionScope(*item, "scope");
        if (!read.ok()) return ConnectRpcErrorResponse(read.status());
        scope = *read;
      }
    }
    // FLEET without peers: this broker is the whole fleet.
    FleetBanList list;
    if (scope == ConnectionScope::kFleet && admin.list_fleet) {
      list = admin.list_fleet();
    } else {
      for (Ban& ban : admin.list()) list.bans.push_back({admin.node_id, std::move(ban)});
      list.refused_total = admin.refused_total();
    }
    return ConnectRpcAnswer(
        codec,
        [&] {
          return EncodeListBansResponseProto(list.bans, list.refused_total, admin.node_id,
                                             list.failed);
        },
        [&](JsonWriter* json) {
          json->Key("bans").BeginArray();
          for (const NodeBan& ban : list.bans) WriteNodeBan(ban, json);
          json->EndArray();
          // int64: a string in protobuf's JSON mapping.
          json->Key("refusedTotal").String(std::to_string(list.refused_total));
          if (!list.failed.empty()) {
            json->Key("peerErrors").BeginArray();
            for (const BrokerBanOutcome& failed : list.failed) WritePeerError(failed, json);
            json->EndArray();
          }
          json->Key("nodeId").Int(admin.node_id);
        });
  }
  const bool banned = method == kBanClientMethod;
  Ban ban;
  BanRequestFields fields;
  Status read;
  if (banned) {
    if (proto) {
      read = DecodeBanClientRequestProto(request.body, "request body", &fields);
      if (read.ok()) read = CheckBanRequest(fields, admin.now_ns(), true, &ban);
    } else {
      read = ReadBanRequest(request.body, admin.now_ns(), true, &ban);
      if (read.ok()) read = ReadPlaceJson(request.body, &fields);
    }
  } else if (proto) {
    read = DecodeUnbanClientRequestProto(request.body, "request body", &fields);
    if (read.ok()) read = ParseBanTarget(fields.as, fields.who, &ban);
  } else {
    read = ReadTarget(request.body, &ban);
    if (read.ok()) read = ReadPlaceJson(request.body, &fields);
  }
  BanPlace place;
  if (read.ok()) read = PlaceOf(fields, &place);
  if (!read.ok()) return ConnectRpcErrorResponse(read);
  // A change for another broker goes there with the caller's own token (docs/fleet.md).
  Caller forwarding = caller;
  if (const std::string* authorization = request.FindHeader("Authorization")) {
    forwarding.authorization = *authorization;
  }
  const FleetBanOutcome result = ChangeAt(admin, !banned, ban, place, forwarding);
  const BanOutcome& outcome = result.outcome;
  if (!outcome.status.ok()) return ConnectRpcErrorResponse(outcome.status);
  const NodeBan answered{result.node_id, outcome.ban};
  return ConnectRpcAnswer(
      codec,
      [&] {
        return banned ? EncodeBanClientResponseProto(answered, outcome.kicked, result.brokers)
                      : EncodeUnbanClientResponseProto(answered, result.brokers);
      },
      [&](JsonWriter* json) {
        json->Key("ban");
        WriteNodeBan(answered, json);
        if (banned) {
          json->Key("kicked").Int(static_cast<std::int64_t>(result.outcome.kicked));
        } else {
          json->Key("removed").Bool(true);
        }
        WriteBrokerOutcomes(result.brokers, json);
      });
}

}  // namespace mqc
