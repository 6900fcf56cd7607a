// SPDX-License-Identifier: BSD-3-Clause
// The Connect protocol as every part of the Connect RPC service shares it: the handler the
// router calls for a method (http_router.h), the two codecs (connect_codec.h), the decoded
// request messages and the response both codecs write (connect_rpc_json.h, connect_rpc_proto.h),
// and the checks of a unary POST that every unary method passes (connect_rpc_service.h, and the
// admin views disconnect_view.h and ban_view.h). Nothing here reads or writes one codec.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "companion/connection.h"
#include "companion/connection_changes.h"
#include "companion/http/http_server.h"
#include "companion/query/connection_query.h"

namespace mqc {

// A Connect RPC unary call: `method` is the part after the service prefix ("ListConnections";
// possibly unknown or empty: answer `unimplemented`), `request` is the whole HTTP request
// (POST, or GET/HEAD for Connect's GET form).
using ConnectRpcHandler =
    std::function<HttpResponse(const std::string& method, const HttpRequest& request)>;

inline constexpr char kConnectRpcServicePrefix[] = "/mqtt.connections.v1.ConnectionsService/";

// "A, B, C": method names as an `unimplemented` answer lists the implemented ones, sorted.
inline std::string JoinMethodNames(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : ", ") + name;
  return joined;
}

enum class ConnectCodec : std::uint8_t { kJson, kProto };

// ListConnectionsRequest.scope: numbers as in the schema's ConnectionScope.
enum class ConnectionScope : std::uint8_t { kUnspecified = 0, kNode = 1, kFleet = 2 };

// A decoded ListConnectionsRequest message (field names as in protobuf's JSON mapping).
struct ListConnectionsRequest {
  std::string filter;
  std::string order_by;
  std::int32_t page_size = 0;  // 0: the default page size
  std::string page_token;
  ConnectionScope scope = ConnectionScope::kUnspecified;  // unset: this node alone
};

// A decoded WatchConnectionsRequest.
struct WatchConnectionsRequest {
  std::string filter;
  std::uint64_t resume_after = 0;  // 0: start with the current state
  ConnectionScope scope = ConnectionScope::kUnspecified;  // unset: this node alone
  std::string resume_token;  // FLEET: the per-broker positions (companion/fleet/)
};

// One WatchConnectionsResponse, as both codecs write it. The pointers may be null (unset).
struct WatchMessage {
  std::uint64_t sequence = 0;
  ChangeKind kind = ChangeKind::kUnspecified;
  const Connection* connection = nullptr;
  const Subscription* subscription = nullptr;
  std::uint32_t node_id = 0;      // 0: left out
  std::string_view resume_token;  // empty: left out
  const PeerFailure* peer_error = nullptr;
};

// One WatchConnectionsResponse as read from a peer (the binary codec).
struct DecodedWatchMessage {
  std::uint64_t sequence = 0;
  ChangeKind kind = ChangeKind::kUnspecified;
  std::uint32_t node_id = 0;
  bool has_connection = false;
  Connection connection;
  bool has_subscription = false;
  Subscription subscription;
};

// The checks every Connect unary POST passes before its body is read: Content-Type (415),
// Connect-Protocol-Version (400), Connect-Timeout-Ms (400), Content-Encoding (501). False with
// the Connect error in *error; *codec is the one the Content-Type names. For methods served
// outside ConnectRpcService (DisconnectConnection, the ban methods). Defined in
// connect_rpc_service.cc, beside the single checks it is made of, which the service's own
// calls use one at a time.
bool CheckConnectUnaryPost(const HttpRequest& request, ConnectCodec* codec, HttpResponse* error);

}  // namespace mqc
