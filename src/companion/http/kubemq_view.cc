// SPDX-License-Identifier: BSD-3-Clause
// The KubeMQ connections endpoint (see kubemq_view.h).
//
// Where the spec is silent:
// - Query parameters become a typed query (clauses, order) for RunConnectionQuery, the rich
//   API's engine, so both APIs select alike, and a value of any length or content selects
//   exactly itself (no filter text is written and parsed again): client_id and username match
//   exactly, or by prefix when the value ends in '*' (as in the rich API's filter); pattern selects
//   connections with at least one subscription of that pattern. MHD decodes '+' as a space: send a
//   literal '+' as %2B.
// - client_id may be given up to kMaxInValues times (`?client_id=a&client_id=b`): connections
//   with any of them (one clause `client_id IN (...)`, which the engine answers from the client
//   id index when no value is a prefix); the same value twice is fine.
// - Refused with 400: an unknown parameter (also an empty name, as in "?&limit=1"), one other than
//   client_id given twice (even with the same value), an empty value, and a value outside what is
//   accepted.
//   Numbers are plain decimal digits (no sign, no spaces); leading zeros are fine.
// - Without limit every match is listed (page after page of the engine's maximum), as KubeMQ
//   does; an offset past the end gives an empty list.
// - remote_addr when the port is unknown (0): the address alone, without brackets for IPv6
//   (unambiguous without a port); an unknown address: "" (written in kubemq_list_json.cc).
// - Values quoted back in error messages are cut to 64 bytes and made valid UTF-8.
// - Strings from the registry are made valid UTF-8 (link/json_string.h); the broker already
//   checks client ids, usernames and topics, so in practice they pass unchanged.
#include "companion/http/kubemq_view.h"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "companion/http/kubemq_list_json.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"
#include "companion/json_writer.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_filter.h"
#include "companion/query/connection_order.h"
#include "companion/query/connection_query.h"
#include "link/status.h"

namespace mqc {
namespace {

constexpr std::int64_t kMaxLimit = 10000;  // as in kLimit.accepted
static_assert(kMaxLimit <= kMaxPageSize, "a limit must fit in one page of the engine");

struct ParameterSpec {
  std::string_view name;
  std::string_view accepted;  // for error messages
};

constexpr ParameterSpec kClientId{"client_id", "a client id, or a prefix ending in *"};
constexpr ParameterSpec kUsername{"username", "a username, or a prefix ending in *"};
constexpr ParameterSpec kPattern{"pattern", "one of events, store, queues, commands, queries"};
constexpr ParameterSpec kProtocolVersion{"protocol_version", "3, 4 or 5"};
constexpr ParameterSpec kLimit{"limit", "an integer from 1 to 10000"};
constexpr ParameterSpec kOffset{"offset", "an integer from 0"};
constexpr const ParameterSpec* kParameters[] = {&kClientId,        &kUsername, &kPattern,
                                                &kProtocolVersion, &kLimit,    &kOffset};
constexpr std::string_view kParameterList =
    "client_id, username, pattern, protocol_version, limit, offset";

std::string BadValue(const ParameterSpec& spec, std::string_view value) {
  return "query parameter '" + std::string(spec.name) + "' is " +
         (value.empty() ? std::string("empty") : QuoteForMessage(value)) + "; expected " +
         std::string(spec.accepted);
}

// A whole-string decimal integer in [min, max].
bool ParseInteger(std::string_view text, std::int64_t min, std::int64_t max, std::int64_t* value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty() && text.front() != '-' && *value >= min &&
         *value <= max;
}

const FieldDef& Field(std::string_view path) {
  const FieldDef* field = FindField(path);
  if (field == nullptr) throw std::logic_error("no query field " + std::string(path));
  return *field;
}

// `field = value`, or a prefix test when `value` ends in '*' (as the rich API's filter reads a
// literal ending in a bare '*').
FilterClause TextClause(std::string_view path, std::string_view value, bool allow_prefix) {
  FilterClause clause;
  clause.field = &Field(path);
  clause.prefix = allow_prefix && !value.empty() && value.back() == '*';
  if (clause.prefix) value.remove_suffix(1);
  clause.text = std::string(value);
  return clause;
}

FilterClause NumberClause(std::string_view path, std::int64_t number) {
  FilterClause clause;
  clause.field = &Field(path);
  clause.number = number;
  return clause;
}

// The page orders by connected_at as it shows it, in whole seconds, then by client_id: two
// clients of the same second come in client_id order, not in sub-second arrival order. A field
// of this view only (its cursors never leave it as page tokens).
const FieldDef& ConnectedAtField() {
  static const FieldDef field = [] {
    FieldDef def = Field("open_time");
    def.path = "connected_at";
    def.get = [](const Connection& connection) {
      FieldValue value;
      value.number = connection.open_time_ns - connection.open_time_ns % 1000000000;
      return value;
    };
    return def;
  }();
  return field;
}

bool IsKnownPattern(std::string_view value) {
  for (const Pattern pattern : {Pattern::kEvents, Pattern::kStore, Pattern::kQueues,
                                Pattern::kCommands, Pattern::kQueries}) {
    if (value == PatternName(pattern)) return true;
  }
  return false;
}

// The query parameters as a typed query for RunConnectionQuery: open connections, ordered by
// open_time then client_id. `*list_all` is set when there is no limit. kInvalidArgument
// naming the parameter when one is refused.
Status BuildQuery(const QueryParams& params, TypedConnectionQuery* query, bool* list_all) {
  std::int64_t open = 0;
  if (!FindEnumNumber(Field("state"), "MQTT_CONNECTION_STATE_OPEN", &open)) {
    throw std::logic_error("no open state in the query fields");
  }
  std::int64_t outgoing = 0;
  if (!FindEnumNumber(Field("bridge_role"), "BRIDGE_ROLE_OUTGOING", &outgoing)) {
    throw std::logic_error("no outgoing bridge role in the query fields");
  }
  // The broker's own bridge contexts are no clients of it (the contract: "the internal
  // bridge/inline clients of the broker are not listed"). A remote broker's bridge is.
  FilterClause not_own_bridge = NumberClause("bridge_role", outgoing);
  not_own_bridge.op = CompareOp::kNe;
  std::vector<FilterClause> clauses{NumberClause("state", open), std::move(not_own_bridge)};
  FilterClause client_ids;  // every client_id value: one IN clause
  client_ids.field = &Field("client_id");
  client_ids.op = CompareOp::kIn;
  *list_all = true;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, value] = params[i];
    const ParameterSpec* spec = nullptr;
    for (const ParameterSpec* known : kParameters) {
      if (name == known->name) spec = known;
    }
    if (spec == nullptr) {
      return Status(StatusCode::kInvalidArgument, "unknown query parameter " +
                                                      QuoteForMessage(name) +
                                                      "; accepted: " + std::string(kParameterList));
    }
    for (std::size_t j = 0; j < i && spec != &kClientId; ++j) {
      if (params[j].first == name) {
        return Status(StatusCode::kInvalidArgument,
                      "query parameter '" + name + "' is given more than once (" +
                          QuoteForMessage(params[j].second) + ", then " + QuoteForMessage(value) +
                          "); expected it once");
      }
    }
    std::int64_t number = 0;
    if (spec == &kClientId && !value.empty()) {
      if (client_ids.in.texts.size() + client_ids.in.prefixes.size() == kMaxInValues) {
        return Status(StatusCode::kInvalidArgument,
                      "query parameter 'client_id' is given more than " +
                          std::to_string(kMaxInValues) + " times");
      }
      const FilterClause one = TextClause("client_id", value, true);
      (one.prefix ? client_ids.in.prefixes : client_ids.in.texts).push_back(one.text);
    } else if (spec == &kUsername && !value.empty()) {
      clauses.push_back(TextClause("username", value, true));
    } else if (spec == &kPattern && IsKnownPattern(value)) {
      clauses.push_back(TextClause("subscriptions.pattern", value, false));
    } else if (spec == &kProtocolVersion && ParseInteger(value, 3, 5, &number)) {
      clauses.push_back(NumberClause("protocol_version", number));
    } else if (spec == &kLimit && ParseInteger(value, 1, kMaxLimit, &number)) {
      query->page_size = number;
      *list_all = false;
    } else if (spec == &kOffset && ParseInteger(value, 0, INT64_MAX, &number)) {
      query->offset = number;
    } else {
      return Status(StatusCode::kInvalidArgument, BadValue(*spec, value));
    }
  }
  if (!client_ids.in.texts.empty() || !client_ids.in.prefixes.empty()) {
    clauses.push_back(std::move(client_ids));
  }
  query->filter = ConnectionFilter(std::move(clauses));
  query->order = ConnectionOrder({OrderKey{&ConnectedAtField()}, OrderKey{&Field("client_id")}});
  if (*list_all) query->page_size = kMaxPageSize;
  return Status();
}

// A ConnectionSource over copies the caller holds, with an index by client id as the registry
// has: N repeated client_id values cost N lookups, not N scans of every connection.
class CopiesSource : public ConnectionSource {
 public:
  explicit CopiesSource(std::vector<Connection> connections)
      : connections_(std::move(connections)) {
    by_client_id_.reserve(connections_.size());
    for (const Connection& connection : connections_) {
      by_client_id_.emplace(connection.client_id, &connection);
    }
  }
  CopiesSource(const CopiesSource&) = delete;  // the index views into connections_
  CopiesSource& operator=(const CopiesSource&) = delete;
  std::vector<Connection> Snapshot() const override { return connections_; }
  ConnectionList SharedSnapshot() const override {
    auto shared = std::make_shared<std::vector<ConnectionPtr>>();
    shared->reserve(connections_.size());
    for (const Connection& connection : connections_) shared->push_back(Alias(connection));
    return shared;
  }
  std::vector<ConnectionPtr> FindByClientId(std::string_view client_id) const override {
    std::vector<ConnectionPtr> found;
    auto [it, end] = by_client_id_.equal_range(client_id);
    for (; it != end; ++it) found.push_back(Alias(*it->second));
    return found;
  }

 private:
  // An aliasing pointer: no copy, owned by this source.
  static ConnectionPtr Alias(const Connection& connection) {
    return ConnectionPtr(std::shared_ptr<const Connection>(), &connection);
  }

  std::vector<Connection> connections_;
  std::unordered_multimap<std::string_view, const Connection*> by_client_id_;
};

}  // namespace

HttpResponse KubeMqView::ListConnections(const ConnectionSource& source,
                                         const QueryParams& params) const {
  TypedConnectionQuery query;
  bool list_all = false;
  const Status built = BuildQuery(params, &query, &list_all);
  if (!built.ok()) return Error(kHttpBadRequest, built.message());
  query.unlimited = list_all;
  SharedConnectionPage page;
  const Status status = RunConnectionQuery(source, query, &page);
  if (!status.ok()) return Error(kHttpBadRequest, status.message());

  // About 400 bytes per connection of two subscriptions: one allocation for most answers.
  return KubeMqOkResponse(
      [&page](JsonWriter* json) {
        json->Key("connections").BeginArray();
        AppendKubeMqConnections(page.connections, json->elements_output());
        json->EndArray();
        json->Key("total").Int(static_cast<std::int64_t>(page.connections.size()));
      },
      64 + page.connections.size() * 400);
}

HttpResponse KubeMqView::ListConnections(std::vector<Connection> snapshot,
                                         const QueryParams& params) const {
  return ListConnections(CopiesSource(std::move(snapshot)), params);
}

HttpResponse KubeMqView::Error(int status, std::string_view message) {
  return KubeMqErrorResponse(status, message);
}

}  // namespace mqc
