// SPDX-License-Identifier: BSD-3-Clause
// The binary protobuf side of the Connect RPC service: the model (link/connection.h, a query
// page) as the generated messages of proto/mqtt/connections/v1/connections.proto, and requests
// read from binary protobuf. The JSON side is connect_rpc_json.h; connect_codec.h picks one by
// the request's content type. Pure functions, safe on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "companion/activity_history.h"
#include "companion/admin_actions.h"
#include "companion/client_history.h"
#include "companion/connection.h"
#include "companion/http/connect_protocol.h"
#include "companion/query/connection_query.h"
#include "link/ban_list.h"
#include "link/status.h"
#include "mqtt/connections/v1/connections.pb.h"

namespace mqc {

namespace connections_v1 = ::mqtt::connections::v1;

// The message for one connection. Fields whose zero means "none" or "unknown" (closeTime
// while open, an unknown idleDuration, networkInfo when the kernel did not tell) stay unset.
void ConnectionToProto(const Connection& connection, connections_v1::Connection* message);

// The ListConnectionsResponse for `page`.
void ListConnectionsResponseToProto(const ConnectionPage& page,
                                    connections_v1::ListConnectionsResponse* message);

// Reads a binary ListConnectionsRequest; empty bytes are the default message. `where` names the
// bytes in error messages ("request body"). kInvalidArgument when the bytes are not a valid
// message (truncated, a wrong wire type, a string that is not UTF-8).
Status DecodeListConnectionsRequestProto(std::string_view bytes, std::string_view where,
                                         ListConnectionsRequest* request);

// The reverse of ConnectionToProto, for the answers of fleet peers (companion/fleet/): what
// ConnectionToProto leaves unset comes back as the model's "unknown" (idle -1, no network
// info, message counts unknown). Enum numbers pass through unchanged.
Connection ConnectionFromProto(const connections_v1::Connection& message);

// Reads a binary ListConnectionsResponse (a peer's answer) into *page. kInvalidArgument naming
// `where` when the bytes are not a valid message.
Status DecodeListConnectionsResponseProto(std::string_view bytes, std::string_view where,
                                          ConnectionPage* page);

// The binary encoding of `page` as a ListConnectionsResponse. Throws std::bad_alloc when out of
// memory.
std::string EncodeListConnectionsResponseProto(const ConnectionPage& page);

// DisconnectConnection in binary, for its handler: the request names the connection by client id
// or by uid (a oneof: at most one is set; both empty when the request names none), and whether
// the will is kept back; and the response. kInvalidArgument when the bytes are not a valid
// message.
Status DecodeDisconnectConnectionRequestProto(std::string_view bytes, std::string_view where,
                                              std::string* client_id, std::string* uid,
                                              bool* prevent_will,
                                              std::optional<std::uint32_t>* node_id);
std::string EncodeDisconnectConnectionResponseProto(std::string_view client_id,
                                                    std::string_view uid, bool disconnected);

// The ban RPCs (ban_view.h). A request's fields as sent, checked by the view (an
// UnbanClientRequest fills as, who, node_id and scope).
struct BanRequestFields {
  std::string as;
  std::string who;
  std::string by;
  std::string reason;
  bool has_until = false;
  std::int64_t until_ns = 0;
  bool has_duration = false;
  std::int64_t duration_s = 0;
  std::optional<std::uint32_t> node_id;
  ConnectionScope scope = ConnectionScope::kUnspecified;
};
Status DecodeListBansRequestProto(std::string_view bytes, std::string_view where,
                                  ConnectionScope* scope);
Status DecodeBanClientRequestProto(std::string_view bytes, std::string_view where,
                                   BanRequestFields* fields);
Status DecodeUnbanClientRequestProto(std::string_view bytes, std::string_view where,
                                     BanRequestFields* fields);
// `failed`: the peers missing from a FLEET list (peer_errors).
std::string EncodeListBansResponseProto(const std::vector<NodeBan>& bans,
                                        std::uint64_t refused_total, std::uint32_t node_id,
                                        const std::vector<BrokerBanOutcome>& failed);
// `brokers`: empty for a change on this broker alone; the failed ones also go to peer_errors.
std::string EncodeBanClientResponseProto(const NodeBan& ban, std::size_t kicked,
                                         const std::vector<BrokerBanOutcome>& brokers);
std::string EncodeUnbanClientResponseProto(const NodeBan& ban,
                                           const std::vector<BrokerBanOutcome>& brokers);

// A fleet peer's side of the ban RPCs (fleet/fleet_bans.h): the requests forwarded to it
// (node scope, so that it never forwards again) and its answers read back. kInvalidArgument
// naming `where` when the bytes are not such an answer.
std::string EncodeBanClientRequestProto(const Ban& ban);
std::string EncodeUnbanClientRequestProto(const Ban& target);
Status DecodeListBansResponseProto(std::string_view bytes, std::string_view where,
                                   std::vector<Ban>* bans, std::uint64_t* refused_total,
                                   std::uint32_t* node_id);
Status DecodeBanClientResponseProto(std::string_view bytes, std::string_view where, NodeBan* ban,
                                    std::size_t* kicked);
Status DecodeUnbanClientResponseProto(std::string_view bytes, std::string_view where,
                                      NodeBan* ban);
// GetClientHistory in binary (history_view.h): the request's client id, and the response.
Status DecodeGetClientHistoryRequestProto(std::string_view bytes, std::string_view where,
                                          std::string* client_id);
std::string EncodeGetClientHistoryResponseProto(std::string_view client_id,
                                                const std::vector<ClientEvent>& events,
                                                std::uint64_t dropped);

// GetActivity in binary (activity_view.h).
Status DecodeGetActivityRequestProto(std::string_view bytes, std::string_view where);
std::string EncodeGetActivityResponseProto(std::uint32_t interval_seconds,
                                           const std::vector<ActivitySample>& samples,
                                           bool acl_denials_shown = false);

// WatchConnections in binary: the request, and one response message.
Status DecodeWatchConnectionsRequestProto(std::string_view bytes, std::string_view where,
                                          WatchConnectionsRequest* request);
std::string EncodeWatchConnectionsResponseProto(const WatchMessage& message);
// One response message as a peer sent it (a fleet watch reads its peers in binary).
// kInvalidArgument naming `where` for bytes that are not one.
Status DecodeWatchConnectionsResponseProto(std::string_view bytes, std::string_view where,
                                           DecodedWatchMessage* message);

}  // namespace mqc
