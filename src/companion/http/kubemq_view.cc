// The KubeMQ connections endpoint (see kubemq_view.h).
//
// Where the spec is silent:
// - Query parameters become a typed query (clauses, order) for RunConnectionQuery, the rich
//   API's engine, so both APIs select alike, and a value of any length or content selects
//   exactly itself (no filter text is written and parsed again): client_id and username match
//   exactly, or by prefix when the value ends in '*' (as in the rich API's filter); pattern selects
//   connections with at least one subscription of that pattern. MHD decodes '+' as a space: send a
//   literal '+' as %2B.
// - Refused with 400: an unknown parameter (also an empty name, as in "?&limit=1"), one given
//   twice (even with the same value), an empty value, and a value outside what is accepted.
//   Numbers are plain decimal digits (no sign, no spaces); leading zeros are fine.
// - Without limit every match is listed (page after page of the engine's maximum), as KubeMQ
//   does; an offset past the end gives an empty list.
// - remote_addr when the port is unknown (0): the address alone, without brackets for IPv6
//   (unambiguous without a port); an unknown address: "".
// - Values quoted back in error messages are cut to 64 bytes and made valid UTF-8.
// - Strings from the registry are made valid UTF-8 (json_util.h); the broker already checks
//   client ids, usernames and topics, so in practice they pass unchanged.
#include "companion/http/kubemq_view.h"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "companion/http/json_util.h"
#include "companion/http/view_util.h"
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
  std::vector<FilterClause> clauses{NumberClause("state", open)};
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
    for (std::size_t j = 0; j < i; ++j) {
      if (params[j].first == name) {
        return Status(StatusCode::kInvalidArgument,
                      "query parameter '" + name + "' is given more than once (" +
                          QuoteForMessage(params[j].second) + ", then " + QuoteForMessage(value) +
                          "); expected it once");
      }
    }
    std::int64_t number = 0;
    if (spec == &kClientId && !value.empty()) {
      clauses.push_back(TextClause("client_id", value, true));
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
  query->filter = ConnectionFilter(std::move(clauses));
  query->order = ConnectionOrder({OrderKey{&Field("open_time")}, OrderKey{&Field("client_id")}});
  if (*list_all) query->page_size = kMaxPageSize;
  return Status();
}

// "ip:port", "[v6]:port", or the address alone when the port is unknown.
std::string RemoteAddress(const Connection& connection) {
  if (connection.ip_address.empty()) return "";
  if (connection.port == 0) return connection.ip_address;
  const bool v6 = connection.ip_address.find(':') != std::string::npos;
  return (v6 ? "[" + connection.ip_address + "]" : connection.ip_address) + ":" +
         std::to_string(connection.port);
}

CjsonPtr SubscriptionJson(const Subscription& subscription) {
  CjsonPtr object = NewJsonObject();
  AddToJsonObject(object.get(), "filter", NewJsonString(subscription.filter));
  AddToJsonObject(object.get(), "qos", NewJsonNumber(subscription.qos));
  AddToJsonObject(object.get(), "pattern",
                  NewJsonString(PatternName(subscription.mapping.pattern)));
  AddToJsonObject(object.get(), "channel", NewJsonString(subscription.mapping.channel));
  AddToJsonObject(object.get(), "shared_group", NewJsonString(subscription.mapping.shared_group));
  return object;
}

CjsonPtr ConnectionJson(const Connection& connection) {
  CjsonPtr object = NewJsonObject();
  AddToJsonObject(object.get(), "client_id", NewJsonString(connection.client_id));
  AddToJsonObject(object.get(), "protocol_version", NewJsonNumber(connection.protocol_version));
  AddToJsonObject(object.get(), "remote_addr", NewJsonString(RemoteAddress(connection)));
  AddToJsonObject(object.get(), "connected_at",
                  NewJsonString(FormatRfc3339Seconds(connection.open_time_ns)));
  AddToJsonObject(object.get(), "clean_session", NewJsonBool(connection.clean_session));
  if (!connection.username.empty()) {
    AddToJsonObject(object.get(), "username", NewJsonString(connection.username));
  }
  CjsonPtr subscriptions = NewJsonArray();
  for (const Subscription& subscription : connection.subscriptions) {
    AddToJsonArray(subscriptions.get(), SubscriptionJson(subscription));
  }
  AddToJsonObject(object.get(), "subscriptions", std::move(subscriptions));
  return object;
}

}  // namespace

HttpResponse KubeMqView::ListConnections(std::vector<Connection> snapshot,
                                         const QueryParams& params) const {
  TypedConnectionQuery query;
  bool list_all = false;
  const Status built = BuildQuery(params, &query, &list_all);
  if (!built.ok()) return Error(kHttpBadRequest, built.message());
  // The page orders by connected_at as it shows it, in whole seconds, then by client_id: two
  // clients of the same second come in client_id order, not in sub-second arrival order.
  for (Connection& connection : snapshot) {
    connection.open_time_ns -= connection.open_time_ns % 1000000000;
  }

  CjsonPtr connections = NewJsonArray();
  int total = 0;
  while (true) {
    TypedConnectionPage page;
    // Every page reads the same snapshot, by reference.
    const Status status = RunConnectionQuery(snapshot, query, &page);
    if (!status.ok()) return Error(kHttpBadRequest, status.message());
    for (const Connection& connection : page.connections) {
      AddToJsonArray(connections.get(), ConnectionJson(connection));
      ++total;
    }
    if (!list_all || !page.next) break;
    query.after = std::move(page.next);
  }

  CjsonPtr data = NewJsonObject();
  AddToJsonObject(data.get(), "connections", std::move(connections));
  AddToJsonObject(data.get(), "total", NewJsonNumber(total));
  CjsonPtr envelope = NewJsonObject();
  AddToJsonObject(envelope.get(), "error", NewJsonBool(false));
  AddToJsonObject(envelope.get(), "error_string", NewJsonString(""));
  AddToJsonObject(envelope.get(), "data", std::move(data));
  return JsonResponse(kHttpOk, *envelope);
}

HttpResponse KubeMqView::Error(int status, std::string_view message) {
  return KubeMqErrorResponse(status, message);
}

}  // namespace mqc
