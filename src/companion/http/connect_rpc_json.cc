// SPDX-License-Identifier: BSD-3-Clause
// The JSON side of the Connect RPC service (see connect_rpc_json.h). Requests are read with
// cJSON (its tree is what the checks below walk); answers are written with JsonWriter, straight
// into the answer's text in the schema's field order, no tree of nodes.
//
// Where the spec is silent:
// - Body / message: zero bytes mean the defaults (whitespace alone is not JSON); otherwise valid
//   UTF-8 holding exactly one JSON object (RFC 8259: cJSON's extras such as `01`, `1.` or raw
//   control characters in strings are refused). Known fields may be given in either spelling
//   (`orderBy` / `order_by`), but once: a field given twice, also in both spellings, is
//   refused (protobuf's JSON parser refuses duplicates too). `null` means the default. Unknown
//   fields are ignored. A `\u0000` escape anywhere in the message is refused: cJSON's strings
//   end at a NUL, so the value read would silently differ from the one sent.
// - pageSize: int32 as protobuf's JSON mapping reads it: a JSON number or a string holding a
//   JSON number, integral (`1e2` and `100.0` are 100), within int32; then the query engine's
//   range (0 to 10000). JSON numbers are read as doubles, so a fraction finer than a double
//   holds (1.0000000000000001) is not seen; numbers in strings are read exactly.
// - Response (protobuf JSON, lowerCamelCase, int64/uint64 as strings, timestamps with nine
//   fractional digits, durations "1.500s"): protobuf JSON allows writing default values, and
//   this writes every field whose zero is a real value (nodeId 0, cleanSession false, keepAlive
//   0, counters "0", tlsInfo.enabled false, `connections` [] and `subscriptions` [],
//   `totalSize` "0", enums at UNSPECIFIED), so that a reader needs no defaults table. Fields
//   whose zero means "none" or "unknown" are omitted (those the binary codec leaves unset too
//   are decided in the field table, connection_field_table.h): closeTime and closeReason unless
//   closed (closeTime also when 0), username, listenerName, source.ipAddress, tlsVersion, cipher,
//   peerCertificateSubject, userPrincipal, method when empty, source.port when 0, `proxy` for
//   a client the broker's socket reaches directly (its port when 0), idleDuration
//   when unknown (< 0), the message counts when unknown (messagesQueued and messagesInFlight
//   also where the broker counts only their sum, messagesPending), networkInfo when the kernel
//   reported no socket for the connection (closed ones, offline sessions, a Unix socket listener,
//   an unknown remote port; its durations when unknown, proxySocket when false), a subscription's
//   mappingError when the mapping is valid, and nextPageToken on the last page. A subscription
//   always has filter, qos, pattern, channel and sharedGroup, empty strings included, as on the
//   KubeMQ endpoint.
// - Enum names are the schema's (proto/mqtt/connections/v1/connections.proto), which the
//   filter's table (connection_field_table.h) also takes, so that what a response shows can be
//   filtered on: close reasons without a CLOSE_REASON_ prefix (`CLIENT_DISCONNECT`) except the
//   zero, CLOSE_REASON_UNSPECIFIED. A number no name is known for is written as a JSON number,
//   as protobuf's JSON mapping does.
#include "companion/http/connect_rpc_json.h"

#include <cjson/cJSON.h>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "companion/connection_field_table.h"
#include "companion/json_util.h"
#include "companion/json_writer.h"
#include "link/text_util.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

// --- the request message -------------------------------------------------------------------

// A JSON number (RFC 8259), split into its parts.
struct JsonNumber {
  bool negative = false;
  std::string_view integer_digits;
  std::string_view fraction_digits;
  std::int64_t exponent = 0;  // saturates far beyond anything that matters for an int32
};

bool SplitJsonNumber(std::string_view text, JsonNumber* number) {
  std::size_t i = 0;
  const auto digits_from = [&text, &i](std::size_t begin) {
    while (i < text.size() && IsAsciiDigit(text[i])) ++i;
    return text.substr(begin, i - begin);
  };
  if (i < text.size() && text[i] == '-') {
    number->negative = true;
    ++i;
  }
  if (i >= text.size() || !IsAsciiDigit(text[i])) return false;
  if (text[i] == '0') {
    number->integer_digits = text.substr(i, 1);
    ++i;
  } else {
    number->integer_digits = digits_from(i);
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    number->fraction_digits = digits_from(i);
    if (number->fraction_digits.empty()) return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative_exponent = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
      negative_exponent = text[i] == '-';
      ++i;
    }
    const std::string_view exponent_digits = digits_from(i);
    if (exponent_digits.empty()) return false;
    constexpr std::int64_t kSaturated = 1'000'000'000;
    for (const char c : exponent_digits) {
      number->exponent = std::min(kSaturated, number->exponent * 10 + (c - '0'));
    }
    if (negative_exponent) number->exponent = -number->exponent;
  }
  return i == text.size();
}

enum class Int32Status : std::uint8_t { kOk, kNotANumber, kNotAnInteger, kOutOfRange };

// A JSON number in text, exactly (no floating point): 100, 1e2, 100.0 and 1000e-1 are 100.
Int32Status ParseJsonInt32(std::string_view text, std::int32_t* value) {
  JsonNumber number;
  if (!SplitJsonNumber(text, &number)) return Int32Status::kNotANumber;
  std::string digits(number.integer_digits);
  digits += number.fraction_digits;
  const std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) {
    *value = 0;
    return Int32Status::kOk;
  }
  digits.erase(0, first);
  // The value is digits * 10^scale; trailing zeros move into the scale.
  std::int64_t scale = number.exponent - static_cast<std::int64_t>(number.fraction_digits.size());
  while (scale < 0 && digits.back() == '0') {
    digits.pop_back();
    ++scale;
  }
  if (scale < 0) return Int32Status::kNotAnInteger;
  constexpr std::int64_t kMaxDigits = 10;  // 2147483648
  if (static_cast<std::int64_t>(digits.size()) + scale > kMaxDigits) {
    return Int32Status::kOutOfRange;
  }
  digits.append(static_cast<std::size_t>(scale), '0');
  std::int64_t magnitude = 0;
  for (const char c : digits) magnitude = magnitude * 10 + (c - '0');
  const std::int64_t signed_value = number.negative ? -magnitude : magnitude;
  if (signed_value < std::numeric_limits<std::int32_t>::min() ||
      signed_value > std::numeric_limits<std::int32_t>::max()) {
    return Int32Status::kOutOfRange;
  }
  *value = static_cast<std::int32_t>(signed_value);
  return Int32Status::kOk;
}

// What cJSON accepts beyond RFC 8259, and a `\u0000` escape; `text` must be JSON cJSON parsed,
// so only strings and numbers are left to look at. kInvalidArgument saying what it found.
Status CheckJsonDetails(std::string_view text) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '"') {
        in_string = false;
      } else if (c == '\\') {
        if (text.substr(i + 1, 5) == "u0000") {
          return InvalidArgument("a \\u0000 escape at byte " + std::to_string(i) +
                                 " (strings must not contain U+0000)");
        }
        ++i;  // the escaped character; cJSON has checked the escape
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return InvalidArgument("a control character inside a string at byte " + std::to_string(i) +
                               " (escape it)");
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '-' || IsAsciiDigit(c)) {
      std::size_t end = i;
      while (end < text.size() &&
             std::string_view("0123456789+-.eE").find(text[end]) != std::string_view::npos) {
        ++end;
      }
      JsonNumber number;
      if (!SplitJsonNumber(text.substr(i, end - i), &number)) {
        return InvalidArgument("malformed number " + QuoteForMessage(text.substr(i, end - i)) +
                               " at byte " + std::to_string(i));
      }
      i = end - 1;
    }
  }
  return Status();
}

std::string_view JsonTypeName(const cJSON& item) {
  if (cJSON_IsString(&item)) return "a string";
  if (cJSON_IsNumber(&item)) return "a number";
  if (cJSON_IsBool(&item)) return "a boolean";
  if (cJSON_IsNull(&item)) return "null";
  if (cJSON_IsArray(&item)) return "an array";
  return "an object";
}

std::string FieldName(std::string_view name) { return "field '" + std::string(name) + "'"; }

enum class RequestField : std::uint8_t { kFilter, kOrderBy, kPageSize, kPageToken, kScope };

struct RequestFieldName {
  std::string_view json_name;
  RequestField field;
  std::string ListConnectionsRequest::*text;  // where a string field goes; null otherwise
};

// protobuf's JSON names and the original field names, both of which its parsers accept.
constexpr RequestFieldName kRequestFieldNames[] = {
    {"filter", RequestField::kFilter, &ListConnectionsRequest::filter},
    {"orderBy", RequestField::kOrderBy, &ListConnectionsRequest::order_by},
    {"order_by", RequestField::kOrderBy, &ListConnectionsRequest::order_by},
    {"pageSize", RequestField::kPageSize, nullptr},
    {"page_size", RequestField::kPageSize, nullptr},
    {"pageToken", RequestField::kPageToken, &ListConnectionsRequest::page_token},
    {"page_token", RequestField::kPageToken, &ListConnectionsRequest::page_token},
    {"scope", RequestField::kScope, nullptr},
};
constexpr std::size_t kRequestFieldCount = 5;

constexpr const char* kScopeNames[] = {"CONNECTION_SCOPE_UNSPECIFIED", "CONNECTION_SCOPE_NODE",
                                       "CONNECTION_SCOPE_FLEET"};

}  // namespace

// The enum's name or its number, as protobuf's JSON mapping accepts both.
StatusOr<ConnectionScope> ReadConnectionScope(const cJSON& item, std::string_view name) {
  std::size_t index = std::size(kScopeNames);
  if (cJSON_IsString(&item)) {
    for (std::size_t i = 0; i < std::size(kScopeNames); ++i) {
      if (std::string_view(item.valuestring) == kScopeNames[i]) index = i;
    }
  } else if (cJSON_IsNumber(&item) && item.valuedouble >= 0 &&
             item.valuedouble < static_cast<double>(std::size(kScopeNames)) &&
             std::trunc(item.valuedouble) == item.valuedouble) {
    index = static_cast<std::size_t>(item.valuedouble);
  }
  if (index == std::size(kScopeNames)) {
    const std::string got =
        cJSON_IsString(&item) ? QuoteForMessage(item.valuestring) : std::string(JsonTypeName(item));
    return InvalidArgument(FieldName(name) + " is " + got +
                           "; expected CONNECTION_SCOPE_NODE or CONNECTION_SCOPE_FLEET");
  }
  return static_cast<ConnectionScope>(index);
}

namespace {

StatusOr<std::int32_t> ReadPageSize(const cJSON& item, std::string_view name) {
  const std::string field = FieldName(name);
  if (cJSON_IsNumber(&item)) {
    const double value = item.valuedouble;
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", value);
    if (!std::isfinite(value) || value < std::numeric_limits<std::int32_t>::min() ||
        value > std::numeric_limits<std::int32_t>::max()) {
      return InvalidArgument(field + " is out of the int32 range: " + text);
    }
    if (std::trunc(value) != value) {
      return InvalidArgument(field + " must be an integer, got " + text);
    }
    return static_cast<std::int32_t>(value);
  }
  if (!cJSON_IsString(&item)) {
    return InvalidArgument(field + " must be an int32 (a number, or a string holding one), got " +
                           std::string(JsonTypeName(item)));
  }
  std::int32_t page_size = 0;
  switch (ParseJsonInt32(item.valuestring, &page_size)) {
    case Int32Status::kOk:
      return page_size;
    case Int32Status::kNotANumber:
      return InvalidArgument(field + " is " + QuoteForMessage(item.valuestring) +
                             "; expected an int32");
    case Int32Status::kNotAnInteger:
      return InvalidArgument(field + " must be an integer, got " +
                             QuoteForMessage(item.valuestring));
    case Int32Status::kOutOfRange:
      break;
  }
  return InvalidArgument(field +
                         " is out of the int32 range: " + QuoteForMessage(item.valuestring));
}

StatusOr<std::string> ReadStringField(const cJSON& item, std::string_view name) {
  if (!cJSON_IsString(&item)) {
    return InvalidArgument(FieldName(name) + " must be a string, got " +
                           std::string(JsonTypeName(item)));
  }
  return std::string(item.valuestring);
}

}  // namespace

Status DecodeListConnectionsRequest(std::string_view text, std::string_view where,
                                    ListConnectionsRequest* request) {
  *request = ListConnectionsRequest();
  if (text.empty()) return Status();
  const auto fail = [](std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  };
  const std::string what(where);
  const std::size_t nul = text.find('\0');
  if (nul != std::string_view::npos) {
    return fail(what + " is not valid JSON: a NUL byte at byte " + std::to_string(nul));
  }
  const std::string valid = ToValidUtf8(text);
  if (valid != text) {
    std::size_t at = 0;
    while (at < text.size() && at < valid.size() && text[at] == valid[at]) ++at;
    return fail(what + " is not valid UTF-8 (at byte " + std::to_string(at) + ")");
  }
  const CjsonPtr root = ParseJson(text);
  if (root == nullptr) return fail(what + " is not valid JSON");
  const Status details = CheckJsonDetails(text);
  if (!details.ok()) return fail(what + " is not valid JSON: " + details.message());
  if (!cJSON_IsObject(root.get())) {
    return fail(what + " must be a JSON object, got " + std::string(JsonTypeName(*root)));
  }

  const char* seen[kRequestFieldCount] = {};  // the name each field was first given under
  const cJSON* item = nullptr;
  cJSON_ArrayForEach(item, root.get()) {
    const std::string_view name = item->string;
    const RequestFieldName* known = nullptr;
    for (const RequestFieldName& candidate : kRequestFieldNames) {
      if (candidate.json_name == name) known = &candidate;
    }
    if (known == nullptr) continue;  // unknown fields are ignored
    const auto index = static_cast<std::size_t>(known->field);
    if (seen[index] != nullptr) {
      return fail(FieldName(name) + " is given more than once (first as '" + seen[index] +
                  "'); expected it once");
    }
    seen[index] = item->string;
    if (cJSON_IsNull(item)) continue;  // null: the default
    if (known->field == RequestField::kScope) {
      StatusOr<ConnectionScope> scope = ReadConnectionScope(*item, name);
      if (!scope.ok()) return fail(what + ": " + scope.status().message());
      request->scope = *scope;
      continue;
    }
    if (known->text == nullptr) {  // pageSize
      StatusOr<std::int32_t> page_size = ReadPageSize(*item, name);
      if (!page_size.ok()) return fail(what + ": " + page_size.status().message());
      request->page_size = *page_size;
      continue;
    }
    StatusOr<std::string> value = ReadStringField(*item, name);
    if (!value.ok()) return fail(what + ": " + value.status().message());
    request->*known->text = std::move(value).value();
  }
  return Status();
}

namespace {

// --- the response message ------------------------------------------------------------------

constexpr std::int64_t kNanosPerSecond = 1'000'000'000;

// protobuf's Duration in JSON: seconds with 0, 3, 6 or 9 fractional digits ("1.500s", "0s").
std::string FormatDuration(std::int64_t nanos) {
  const bool negative = nanos < 0;
  // Magnitudes as unsigned, so that INT64_MIN has one too.
  const std::uint64_t magnitude =
      negative ? ~static_cast<std::uint64_t>(nanos) + 1 : static_cast<std::uint64_t>(nanos);
  std::string text = (negative ? "-" : "") + std::to_string(magnitude / kNanosPerSecond);
  std::uint64_t fraction = magnitude % kNanosPerSecond;
  if (fraction != 0) {
    std::size_t digits = 9;
    while (digits > 3 && fraction % 1000 == 0) {
      fraction /= 1000;
      digits -= 3;
    }
    const std::string fraction_text = std::to_string(fraction);
    text += '.';
    text.append(digits - fraction_text.size(), '0');
    text += fraction_text;
  }
  return text + "s";
}

// An enum value as responses name it (see the top of this file).
void WriteEnum(const EnumNames& names, std::int64_t number, JsonWriter* json) {
  const std::string_view name = names.ResponseName(number);
  if (name.empty()) {
    json->Int(number);
  } else {
    json->String(name);
  }
}

// An int64 or uint64 member: protobuf's JSON mapping writes it as a string of digits.
template <typename Integer>
std::string_view DecimalDigits(Integer value, char (&digits)[24]) {
  const auto result = std::to_chars(digits, digits + sizeof(digits), value);
  return std::string_view(digits, static_cast<std::size_t>(result.ptr - digits));
}
template <typename Integer>
void WriteDecimalString(std::string_view key, Integer value, JsonWriter* json) {
  char digits[24];
  json->Key(key).String(DecimalDigits(value, digits));
}

void WriteStringIfSet(std::string_view key, std::string_view value, JsonWriter* json) {
  if (!value.empty()) json->Key(key).String(value);
}

// --- the values of the sub-messages and repeated fields, by their model type ---------------

void WriteValue(const SourceOf& source, JsonWriter* json) {
  json->BeginObject();
  WriteStringIfSet("ipAddress", source.ip_address, json);
  if (source.port != 0) json->Key("port").Int(source.port);
  json->EndObject();
}

void WriteValue(const TlsInfo& tls, JsonWriter* json) {
  json->BeginObject();
  json->Key("enabled").Bool(tls.enabled);
  WriteStringIfSet("tlsVersion", tls.tls_version, json);
  WriteStringIfSet("cipher", tls.cipher, json);
  WriteStringIfSet("peerCertificateSubject", tls.peer_certificate_subject, json);
  json->EndObject();
}

void WriteValue(const AuthenticationInfo& authentication, JsonWriter* json) {
  json->BeginObject();
  json->Key("mechanism");
  WriteEnum(EnumNamesOf(authentication.mechanism),
            static_cast<std::int64_t>(authentication.mechanism), json);
  json->Key("state");
  WriteEnum(EnumNamesOf(authentication.state), static_cast<std::int64_t>(authentication.state),
            json);
  WriteStringIfSet("userPrincipal", authentication.user_principal, json);
  WriteStringIfSet("method", *authentication.method, json);
  json->EndObject();
}

void WriteValue(const RequestStatistics& statistics, JsonWriter* json) {
#define MQC_WRITE_STATISTIC(name, json_name) WriteDecimalString(#json_name, statistics.name, json);
  json->BeginObject();
  MQC_REQUEST_STATISTICS_FIELDS(MQC_WRITE_STATISTIC)
  json->EndObject();
#undef MQC_WRITE_STATISTIC
}

// What the kernel says of the connection's socket: numbers as JSON numbers (uint32 in
// protobuf's JSON mapping), durations as protobuf Duration strings.
void WriteValue(const NetworkInfo& network, JsonWriter* json) {
  json->BeginObject();
  json->Key("rttMicros").Int(network.rtt_us);
  json->Key("rttVarianceMicros").Int(network.rtt_variance_us);
  json->Key("retransmits").Int(network.retransmits);
  json->Key("sendQueueBytes").Int(network.send_queue_bytes);
  json->Key("receiveQueueBytes").Int(network.receive_queue_bytes);
  if (HasSinceLastReceive(network)) {
    json->Key("sinceLastReceive").String(FormatDuration(network.since_last_receive_ns));
  }
  if (HasSinceLastSend(network)) {
    json->Key("sinceLastSend").String(FormatDuration(network.since_last_send_ns));
  }
  if (network.proxy_socket) json->Key("proxySocket").Bool(true);
  json->EndObject();
}

void WriteValue(const Subscription& subscription, JsonWriter* json) {
  json->BeginObject();
  json->Key("filter").String(subscription.filter);
  json->Key("qos").Int(subscription.qos);
  json->Key("pattern").String(PatternName(subscription.mapping.pattern));
  json->Key("channel").String(subscription.mapping.channel);
  json->Key("sharedGroup").String(*subscription.mapping.shared_group);
  WriteStringIfSet("mappingError", *subscription.mapping.error, json);
  json->Key("kubemqValid").Bool(subscription.kubemq_error->empty());
  WriteStringIfSet("kubemqError", *subscription.kubemq_error, json);
  json->EndObject();
}

void WriteValue(const std::string& text, JsonWriter* json) { json->String(text); }

// --- one field of the table (connection_field_table.h): its value, by its kind -------------

void WriteInt(std::int64_t value, JsonWriter* json) { json->Int(value); }
void WriteUint64(std::uint64_t value, JsonWriter* json) {
  char digits[24];
  json->String(DecimalDigits(value, digits));
}
void WriteBool(bool value, JsonWriter* json) { json->Bool(value); }
void WriteString(std::string_view value, JsonWriter* json) { json->String(value); }
template <typename Enum>
void WriteEnum(Enum value, JsonWriter* json) {
  WriteEnum(EnumNamesOf(value), static_cast<std::int64_t>(value), json);
}
void WriteTimestamp(std::int64_t unix_ns, JsonWriter* json) {
  json->String(FormatRfc3339Nanos(unix_ns));
}
void WriteDuration(std::int64_t ns, JsonWriter* json) { json->String(FormatDuration(ns)); }
template <typename Value>
void WriteMessage(const Value& value, JsonWriter* json) {
  WriteValue(value, json);
}
template <typename Container>
void WriteRepeated(const Container& values, JsonWriter* json) {
  json->BeginArray();
  for (const auto& value : values) WriteValue(value, json);
  json->EndArray();
}

// The key is written here, a literal, so that JsonWriter::Key copies a length known when
// compiling (as the hand-written encoder did).
#define MQC_WRITE_JSON_FIELD(name, json_name, number, label, proto_type, kind, value, present, \
                             known, query, decode)                                             \
  if ((present) && IsTold(value)) {                                                            \
    json->Key(#json_name);                                                                     \
    Write##kind(ToldValue(value), json);                                                       \
  }

void WriteConnection(const Connection& c, JsonWriter* json) {
  json->BeginObject();
  MQC_CONNECTION_FIELDS(MQC_WRITE_JSON_FIELD)
  json->EndObject();
}

#undef MQC_WRITE_JSON_FIELD

}  // namespace

std::string ListConnectionsResponseJson(const ConnectionPage& page) {
  std::string text;
  // About 1 kB per connection of one subscription with its details: one allocation for most
  // pages.
  text.reserve(64 + page.connections.size() * 1024);
  JsonWriter json(&text);
  json.BeginObject();
  json.Key("connections").BeginArray();
  for (const Connection& connection : page.connections) WriteConnection(connection, &json);
  json.EndArray();
  WriteDecimalString("totalSize", page.total_size, &json);
  WriteStringIfSet("nextPageToken", page.next_page_token, &json);
  if (!page.peer_errors.empty()) {
    json.Key("peerErrors").BeginArray();
    for (const PeerFailure& failure : page.peer_errors) {
      json.BeginObject();
      json.Key("peer").String(failure.peer);
      json.Key("code").String(failure.code);
      json.Key("message").String(failure.message);
      json.EndObject();
    }
    json.EndArray();
  }
  if (page.fleet_peers != 0) json.Key("fleetPeers").Int(page.fleet_peers);
  if (page.node_id != 0) json.Key("nodeId").Int(page.node_id);
  if (!page.node_answers.empty()) {
    json.Key("nodeAnswers").BeginArray();
    for (const NodeAnswer& answer : page.node_answers) {
      json.BeginObject();
      WriteStringIfSet("peer", answer.peer, &json);
      if (answer.node_id != 0) json.Key("nodeId").Int(answer.node_id);
      WriteDecimalString("totalSize", answer.total_size, &json);
      json.Key("answerMs").Number(answer.answer_ms);
      json.EndObject();
    }
    json.EndArray();
  }
  json.EndObject();
  return text;
}

namespace {

constexpr const char* kChangeKindNames[] = {
    "CONNECTION_CHANGE_KIND_UNSPECIFIED",  "CONNECTION_CHANGE_KIND_RESET",
    "CONNECTION_CHANGE_KIND_CURRENT",      "CONNECTION_CHANGE_KIND_SYNCED",
    "CONNECTION_CHANGE_KIND_OPENED",       "CONNECTION_CHANGE_KIND_CLOSED",
    "CONNECTION_CHANGE_KIND_SUBSCRIBED",   "CONNECTION_CHANGE_KIND_UNSUBSCRIBED",
    "CONNECTION_CHANGE_KIND_WENT_OFFLINE", "CONNECTION_CHANGE_KIND_EXPIRED",
    "CONNECTION_CHANGE_KIND_UPDATED",      "CONNECTION_CHANGE_KIND_PEER_LOST",
};

// A uint64 in JSON: a string of decimal digits, or a non-negative integral number (protobuf's
// JSON mapping accepts both).
bool ReadUint64(const cJSON& item, std::uint64_t* value) {
  std::string_view text;
  std::string number_text;
  if (cJSON_IsString(&item)) {
    text = item.valuestring;
  } else if (cJSON_IsNumber(&item)) {
    const double number = item.valuedouble;
    if (number < 0 || number > 9007199254740992.0 ||
        number != static_cast<double>(static_cast<std::uint64_t>(number))) {
      return false;
    }
    *value = static_cast<std::uint64_t>(number);
    return true;
  } else {
    return false;
  }
  if (text.empty() || text.size() > 20) return false;
  std::uint64_t result = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
    if (result > (UINT64_MAX - digit) / 10) return false;
    result = result * 10 + digit;
  }
  *value = result;
  return true;
}

}  // namespace

std::string_view ChangeKindName(ChangeKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  return index < std::size(kChangeKindNames) ? kChangeKindNames[index] : kChangeKindNames[0];
}

Status DecodeWatchConnectionsRequest(std::string_view text, std::string_view where,
                                     WatchConnectionsRequest* request) {
  *request = WatchConnectionsRequest();
  if (text.empty()) return Status();
  const std::string what(where);
  const auto fail = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument, what + " " + why);
  };
  if (text.find('\0') != std::string_view::npos || ToValidUtf8(text) != text) {
    return fail("is not valid UTF-8 JSON");
  }
  const CjsonPtr root = ParseJson(text);
  if (root == nullptr || !CheckJsonDetails(text).ok()) return fail("is not valid JSON");
  if (!cJSON_IsObject(root.get())) {
    return fail("must be a JSON object, got " + std::string(JsonTypeName(*root)));
  }
  const cJSON* item = nullptr;
  bool filter_seen = false;
  bool resume_seen = false;
  bool scope_seen = false;
  bool token_seen = false;
  cJSON_ArrayForEach(item, root.get()) {
    const std::string_view name = item->string;
    const bool filter = name == "filter";
    const bool resume = name == "resumeAfter" || name == "resume_after";
    const bool scope = name == "scope";
    const bool token = name == "resumeToken" || name == "resume_token";
    if (!filter && !resume && !scope && !token) continue;  // unknown fields are ignored
    bool& seen = filter ? filter_seen : resume ? resume_seen : scope ? scope_seen : token_seen;
    if (seen) return fail(": " + FieldName(name) + " is given more than once; expected it once");
    seen = true;
    if (cJSON_IsNull(item)) continue;
    if (filter || token) {
      StatusOr<std::string> value = ReadStringField(*item, name);
      if (!value.ok()) return fail(": " + value.status().message());
      (filter ? request->filter : request->resume_token) = std::move(value).value();
    }
    if (scope) {
      StatusOr<ConnectionScope> value = ReadConnectionScope(*item, name);
      if (!value.ok()) return fail(": " + value.status().message());
      request->scope = *value;
    }
    if (resume && !ReadUint64(*item, &request->resume_after)) {
      return fail(": " + FieldName(name) +
                  " must be an unsigned 64-bit integer (a string of digits or a number)");
    }
  }
  return Status();
}

std::string WatchConnectionsResponseJson(const WatchMessage& message) {
  std::string text;
  JsonWriter json(&text);
  json.BeginObject();
  WriteDecimalString("sequence", message.sequence, &json);
  json.Key("kind").String(ChangeKindName(message.kind));
  if (message.connection != nullptr) {
    json.Key("connection");
    WriteConnection(*message.connection, &json);
  }
  if (message.subscription != nullptr) {
    json.Key("subscription");
    WriteValue(*message.subscription, &json);
  }
  if (message.node_id != 0) json.Key("nodeId").Int(message.node_id);
  WriteStringIfSet("resumeToken", message.resume_token, &json);
  if (message.peer_error != nullptr) {
    json.Key("peerError").BeginObject();
    json.Key("peer").String(message.peer_error->peer);
    json.Key("code").String(message.peer_error->code);
    json.Key("message").String(message.peer_error->message);
    json.EndObject();
  }
  json.EndObject();
  return text;
}

}  // namespace mqc
