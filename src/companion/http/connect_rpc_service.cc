// ConnectRpcService (see connect_rpc_service.h).
//
// Where the spec is silent:
// - Checks run method name (501), HTTP method (405), then for POST: Content-Type (415),
//   Connect-Protocol-Version (400), Connect-Timeout-Ms (400), Content-Encoding (501), body
//   (400); for GET/HEAD: connect, encoding (400, or 415 for another codec), compression (501),
//   Connect-Timeout-Ms, message. The first problem found is the one reported.
// - 415 carries a Connect error body with code `invalid_argument` (and `Accept-Post:
//   application/json` for POST): the request is at fault whatever the server's state, and
//   Connect clients take the code from the body. No code maps to 415 in Connect's table;
//   connect-go answers 415 without a body, which clients read as `unknown`, a less useful code.
// - Content-Type: `application/json`, case-insensitive, spaces around the parts tolerated; the
//   only parameter accepted is `charset=utf-8` (quoted or not). Anything else is 415: another
//   charset cannot be read, and an unknown parameter may change the meaning.
// - Connect-Timeout-Ms: 1 to 10 ASCII digits (leading zeros fine, spaces around trimmed). "0"
//   is accepted as an already expired budget (as connect-go and gRPC read a zero timeout) and
//   answered `deadline_exceeded` before any work. The budget runs from the start of Handle();
//   it is checked before the snapshot is taken and again once the response is built
//   (elapsed >= budget: exceeded). Parse and query errors are reported as such even when late.
// - Content-Encoding / compression: only `identity` (case-insensitive; an empty or absent
//   header is identity); others are `unimplemented` listing `identity`, as the protocol asks.
// - GET: `connect=v1` is required (as the header is for POST); `encoding` is required; a missing
//   `message` is the empty message (defaults), as an empty POST body is. A Connect parameter
//   given twice is `invalid_argument`; unknown parameters are ignored (the protocol asks so).
//   `base64=1` selects URL-safe base64 (padding optional, '+' and '/' refused: MHD turns '+'
//   into a space); other `base64` values are ignored, as the protocol says. Send a literal '+'
//   in a plain message as %2B. Connect-Protocol-Version is not looked at on GET.
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
// - Query-engine errors are `invalid_argument`, except the engine's own "internal error ..."
//   (out of memory), which is `internal`.
// - Response (protobuf JSON, lowerCamelCase, int64/uint64 as strings, timestamps with nine
//   fractional digits, durations "1.500s"): protobuf JSON allows writing default values, and
//   this writes every field whose zero is a real value (nodeId 0, cleanSession false, keepAlive
//   0, counters "0", tlsInfo.enabled false, `connections` [] and `subscriptions` [],
//   `totalSize` "0", enums at UNSPECIFIED), so that a reader needs no defaults table. Fields
//   whose zero means "none" or "unknown" are omitted: closeTime and closeReason unless closed
//   (closeTime also when 0), username, listenerName, source.ipAddress, tlsVersion, cipher,
//   peerCertificateSubject, userPrincipal, method when empty, source.port when 0, idleDuration
//   when unknown (< 0), a subscription's mappingError when the mapping is valid, and
//   nextPageToken on the last page. A subscription always has filter, qos, pattern, channel and
//   sharedGroup, empty strings included, as on the KubeMQ endpoint.
// - Enum names are the filter's (connection_fields.cc), so that what a response shows can be
//   filtered on; close reasons without their CLOSE_REASON_ prefix (`CLIENT_DISCONNECT`, as the
//   README lists them; the filter takes both). A number no name is known for is written as a
//   JSON number, as protobuf's JSON mapping does.
#include "companion/http/connect_rpc_service.h"

#include <cjson/cJSON.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/http/json_util.h"
#include "companion/http/view_util.h"
#include "companion/query/connection_fields.h"
#include "companion/query/connection_query.h"
#include "link/status.h"
#include "link/text_util.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

using Milliseconds = std::chrono::milliseconds;

constexpr std::string_view kListConnections = "ListConnections";

// --- Connect errors ------------------------------------------------------------------------

// docs/api.md, the Connect error map; only the codes this service answers with.
constexpr StatusCode kInvalidArgument = StatusCode::kInvalidArgument;
constexpr StatusCode kDeadlineExceeded = StatusCode::kDeadlineExceeded;
constexpr StatusCode kUnimplemented = StatusCode::kUnimplemented;
constexpr StatusCode kInternal = StatusCode::kInternal;

// `status` 0: the code's own status.
HttpResponse ConnectRpcError(StatusCode code, std::string_view message, int status = 0) {
  return ConnectRpcErrorResponse(Status(code, std::string(message)), status);
}

HttpResponse InternalError(const char* what) noexcept {
  try {
    return ConnectRpcError(kInternal, std::string("internal error: ") + what);
  } catch (...) {
    // Out of memory even for that: an error without a body (Connect clients read a bare 500 as
    // `unknown`). A default HttpResponse allocates nothing.
    HttpResponse response;
    response.status = kHttpInternalServerError;
    return response;
  }
}

// --- small text helpers --------------------------------------------------------------------

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Without the spaces and tabs HTTP allows around header values and their parts.
std::string_view TrimSpaces(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  const std::size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

std::string HeaderName(std::string_view name) { return "header '" + std::string(name) + "'"; }

// --- request headers -----------------------------------------------------------------------

constexpr std::string_view kContentType = "Content-Type";
constexpr std::string_view kProtocolVersion = "Connect-Protocol-Version";
constexpr std::string_view kTimeout = "Connect-Timeout-Ms";
constexpr std::string_view kContentEncoding = "Content-Encoding";
constexpr std::size_t kMaxTimeoutDigits = 10;

// `application/json`, optionally with `charset=utf-8`.
bool IsJsonContentType(std::string_view value) {
  std::size_t semicolon = value.find(';');
  if (!EqualsIgnoreAsciiCase(TrimSpaces(value.substr(0, semicolon)), kJsonContentType))
    return false;
  while (semicolon != std::string_view::npos) {
    value.remove_prefix(semicolon + 1);
    semicolon = value.find(';');
    const std::string_view parameter = TrimSpaces(value.substr(0, semicolon));
    if (parameter.empty()) continue;  // "application/json;"
    const std::size_t equals = parameter.find('=');
    if (equals == std::string_view::npos) return false;
    std::string_view charset = TrimSpaces(parameter.substr(equals + 1));
    if (charset.size() >= 2 && charset.front() == '"' && charset.back() == '"') {
      charset = charset.substr(1, charset.size() - 2);
    }
    if (!EqualsIgnoreAsciiCase(TrimSpaces(parameter.substr(0, equals)), "charset") ||
        !EqualsIgnoreAsciiCase(charset, "utf-8")) {
      return false;
    }
  }
  return true;
}

bool CheckContentType(const HttpRequest& request, HttpResponse* error) {
  const std::string* value = request.FindHeader(kContentType);
  if (value != nullptr && IsJsonContentType(*value)) return true;
  const std::string message =
      value == nullptr ? "missing " + HeaderName(kContentType) + "; expected 'application/json'"
                       : HeaderName(kContentType) + " is " + QuoteForMessage(*value) +
                             "; expected 'application/json' (optionally with '; charset=utf-8')";
  *error = ConnectRpcError(kInvalidArgument, message, kHttpUnsupportedMediaType);
  error->headers.emplace_back("Accept-Post", kJsonContentType);
  return false;
}

bool CheckProtocolVersion(const HttpRequest& request, HttpResponse* error) {
  const std::string* value = request.FindHeader(kProtocolVersion);
  if (value != nullptr && TrimSpaces(*value) == "1") return true;
  *error = ConnectRpcError(
      kInvalidArgument,
      value == nullptr
          ? "missing required " + HeaderName(kProtocolVersion) + "; expected '1'"
          : HeaderName(kProtocolVersion) + " is " + QuoteForMessage(*value) + "; expected '1'");
  return false;
}

// Connect-Timeout-Ms, when sent.
bool ReadTimeout(const HttpRequest& request, std::optional<Milliseconds>* budget,
                 HttpResponse* error) {
  const std::string* value = request.FindHeader(kTimeout);
  if (value == nullptr) return true;
  const std::string_view digits = TrimSpaces(*value);
  bool valid = !digits.empty() && digits.size() <= kMaxTimeoutDigits;
  std::int64_t milliseconds = 0;
  for (const char c : digits) {
    valid = valid && IsDigit(c);
    if (valid) milliseconds = milliseconds * 10 + (c - '0');  // at most 10 digits: no overflow
  }
  if (!valid) {
    *error =
        ConnectRpcError(kInvalidArgument, HeaderName(kTimeout) + " is " + QuoteForMessage(*value) +
                                              "; expected milliseconds, 1 to 10 digits");
    return false;
  }
  *budget = Milliseconds(milliseconds);
  return true;
}

bool IsIdentity(std::string_view coding) { return EqualsIgnoreAsciiCase(coding, "identity"); }

HttpResponse UnsupportedCompression(std::string_view what, std::string_view value) {
  return ConnectRpcError(kUnimplemented, std::string(what) + " " + QuoteForMessage(value) +
                                             " is not supported; supported: identity");
}

bool CheckContentEncoding(const HttpRequest& request, HttpResponse* error) {
  const std::string* value = request.FindHeader(kContentEncoding);
  if (value == nullptr || TrimSpaces(*value).empty() || IsIdentity(TrimSpaces(*value))) {
    return true;
  }
  *error = UnsupportedCompression(kContentEncoding, *value);
  return false;
}

// --- Connect's GET form --------------------------------------------------------------------

struct GetParameters {
  const std::string* connect = nullptr;
  const std::string* encoding = nullptr;
  const std::string* message = nullptr;
  const std::string* base64 = nullptr;
  const std::string* compression = nullptr;
};

std::string ParameterName(std::string_view name) {
  return "query parameter '" + std::string(name) + "'";
}

// RFC 4648 section 5 (URL-safe alphabet), padding optional. The unused bits of the last
// character are not checked, as Go's decoder does not check them.
bool DecodePaddedBase64Url(std::string_view text, std::string* out) {
  std::size_t padding = 0;
  while (padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  if (padding > 0 && (padding > 2 || text.size() % 4 != 0)) return false;
  text.remove_suffix(padding);
  if (padding > 0 && text.size() % 4 + padding != 4) return false;
  return DecodeBase64Url(text, out, /*canonical=*/false);
}

// The request message of a GET, still encoded as JSON.
bool ReadGetMessage(const HttpRequest& request, std::string* message, HttpResponse* error) {
  GetParameters parameters;
  const std::pair<std::string_view, const std::string**> known[] = {
      {"connect", &parameters.connect},         {"encoding", &parameters.encoding},
      {"message", &parameters.message},         {"base64", &parameters.base64},
      {"compression", &parameters.compression},
  };
  for (const auto& [name, value] : request.query) {
    for (const auto& [known_name, slot] : known) {
      if (name != known_name) continue;
      if (*slot != nullptr) {
        *error = ConnectRpcError(
            kInvalidArgument, ParameterName(name) + " is given more than once; expected it once");
        return false;
      }
      *slot = &value;
    }
  }
  if (parameters.connect == nullptr || *parameters.connect != "v1") {
    *error = ConnectRpcError(kInvalidArgument,
                             parameters.connect == nullptr
                                 ? "missing " + ParameterName("connect") + "; expected 'v1'"
                                 : ParameterName("connect") + " is " +
                                       QuoteForMessage(*parameters.connect) + "; expected 'v1'");
    return false;
  }
  if (parameters.encoding == nullptr) {
    *error = ConnectRpcError(kInvalidArgument,
                             "missing " + ParameterName("encoding") + "; expected 'json'");
    return false;
  }
  if (*parameters.encoding != "json") {
    // The protocol asks for 415 when the codec is not supported, as for POST's Content-Type.
    *error = ConnectRpcError(kInvalidArgument,
                             ParameterName("encoding") + " is " +
                                 QuoteForMessage(*parameters.encoding) + "; supported: json",
                             kHttpUnsupportedMediaType);
    return false;
  }
  if (parameters.compression != nullptr && !IsIdentity(*parameters.compression)) {
    *error = UnsupportedCompression(ParameterName("compression"), *parameters.compression);
    return false;
  }
  if (parameters.message == nullptr) {
    message->clear();
  } else if (parameters.base64 != nullptr && *parameters.base64 == "1") {
    if (!DecodePaddedBase64Url(*parameters.message, message)) {
      *error = ConnectRpcError(
          kInvalidArgument, ParameterName("message") + " is not valid URL-safe base64 (base64=1)");
      return false;
    }
  } else {
    *message = *parameters.message;
  }
  return true;
}

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
    while (i < text.size() && IsDigit(text[i])) ++i;
    return text.substr(begin, i - begin);
  };
  if (i < text.size() && text[i] == '-') {
    number->negative = true;
    ++i;
  }
  if (i >= text.size() || !IsDigit(text[i])) return false;
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
// so only strings and numbers are left to look at. Sets *why when it finds one.
bool CheckJsonDetails(std::string_view text, std::string* why) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '"') {
        in_string = false;
      } else if (c == '\\') {
        if (text.substr(i + 1, 5) == "u0000") {
          *why = "a \\u0000 escape at byte " + std::to_string(i) +
                 " (strings must not contain U+0000)";
          return false;
        }
        ++i;  // the escaped character; cJSON has checked the escape
      } else if (static_cast<unsigned char>(c) < 0x20) {
        *why = "a control character inside a string at byte " + std::to_string(i) + " (escape it)";
        return false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '-' || IsDigit(c)) {
      std::size_t end = i;
      while (end < text.size() &&
             std::string_view("0123456789+-.eE").find(text[end]) != std::string_view::npos) {
        ++end;
      }
      JsonNumber number;
      if (!SplitJsonNumber(text.substr(i, end - i), &number)) {
        *why = "malformed number " + QuoteForMessage(text.substr(i, end - i)) + " at byte " +
               std::to_string(i);
        return false;
      }
      i = end - 1;
    }
  }
  return true;
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

enum class RequestField : std::uint8_t { kFilter, kOrderBy, kPageSize, kPageToken };

struct RequestFieldName {
  std::string_view json_name;
  RequestField field;
};

// protobuf's JSON names and the original field names, both of which its parsers accept.
constexpr RequestFieldName kRequestFieldNames[] = {
    {"filter", RequestField::kFilter},        {"orderBy", RequestField::kOrderBy},
    {"order_by", RequestField::kOrderBy},     {"pageSize", RequestField::kPageSize},
    {"page_size", RequestField::kPageSize},   {"pageToken", RequestField::kPageToken},
    {"page_token", RequestField::kPageToken},
};
constexpr std::size_t kRequestFieldCount = 4;

bool ReadPageSize(const cJSON& item, std::string_view name, std::int32_t* page_size,
                  std::string* why) {
  const std::string field = FieldName(name);
  if (cJSON_IsNumber(&item)) {
    const double value = item.valuedouble;
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", value);
    if (!std::isfinite(value) || value < std::numeric_limits<std::int32_t>::min() ||
        value > std::numeric_limits<std::int32_t>::max()) {
      *why = field + " is out of the int32 range: " + text;
      return false;
    }
    if (std::trunc(value) != value) {
      *why = field + " must be an integer, got " + text;
      return false;
    }
    *page_size = static_cast<std::int32_t>(value);
    return true;
  }
  if (!cJSON_IsString(&item)) {
    *why = field + " must be an int32 (a number, or a string holding one), got " +
           std::string(JsonTypeName(item));
    return false;
  }
  switch (ParseJsonInt32(item.valuestring, page_size)) {
    case Int32Status::kOk:
      return true;
    case Int32Status::kNotANumber:
      *why = field + " is " + QuoteForMessage(item.valuestring) + "; expected an int32";
      return false;
    case Int32Status::kNotAnInteger:
      *why = field + " must be an integer, got " + QuoteForMessage(item.valuestring);
      return false;
    case Int32Status::kOutOfRange:
      break;
  }
  *why = field + " is out of the int32 range: " + QuoteForMessage(item.valuestring);
  return false;
}

bool ReadStringField(const cJSON& item, std::string_view name, std::string* value,
                     std::string* why) {
  if (!cJSON_IsString(&item)) {
    *why = FieldName(name) + " must be a string, got " + std::string(JsonTypeName(item));
    return false;
  }
  *value = item.valuestring;
  return true;
}

// A ListConnectionsRequest from JSON text. `where` names the text in messages.
bool DecodeRequestMessage(std::string_view text, std::string_view where,
                          ListConnectionsRequest* request, HttpResponse* error) {
  *request = ListConnectionsRequest();
  if (text.empty()) return true;
  const auto fail = [error](const std::string& message) {
    *error = ConnectRpcError(kInvalidArgument, message);
    return false;
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
  std::string why;
  if (!CheckJsonDetails(text, &why)) return fail(what + " is not valid JSON: " + why);
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
    bool ok = true;
    switch (known->field) {
      case RequestField::kFilter:
        ok = ReadStringField(*item, name, &request->filter, &why);
        break;
      case RequestField::kOrderBy:
        ok = ReadStringField(*item, name, &request->order_by, &why);
        break;
      case RequestField::kPageSize:
        ok = ReadPageSize(*item, name, &request->page_size, &why);
        break;
      case RequestField::kPageToken:
        ok = ReadStringField(*item, name, &request->page_token, &why);
        break;
    }
    if (!ok) return fail(what + ": " + why);
  }
  return true;
}

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
CjsonPtr EnumJson(const FieldDef* field, std::int64_t number) {
  if (field != nullptr) {
    for (std::size_t i = 0; i < field->enum_count; ++i) {
      const EnumName& entry = field->enum_names[i];
      if (entry.number != number) continue;
      std::string_view name = entry.name;
      if (!field->short_prefix.empty() &&
          name.substr(0, field->short_prefix.size()) == field->short_prefix) {
        name.remove_prefix(field->short_prefix.size());
      }
      return NewJsonString(name);
    }
  }
  return NewJsonNumber(static_cast<double>(number));
}

void AddString(cJSON* object, const char* key, std::string_view value) {
  AddToJsonObject(object, key, NewJsonString(value));
}

void AddStringIfSet(cJSON* object, const char* key, std::string_view value) {
  if (!value.empty()) AddString(object, key, value);
}

void AddNumber(cJSON* object, const char* key, double value) {
  AddToJsonObject(object, key, NewJsonNumber(value));
}

CjsonPtr StatisticsJson(const RequestStatistics& statistics) {
  CjsonPtr object = NewJsonObject();
  AddString(object.get(), "publishCount", std::to_string(statistics.publish_count));
  AddString(object.get(), "publishBytes", std::to_string(statistics.publish_bytes));
  AddString(object.get(), "deliverCount", std::to_string(statistics.deliver_count));
  AddString(object.get(), "deliverBytes", std::to_string(statistics.deliver_bytes));
  AddString(object.get(), "requestCount", std::to_string(statistics.request_count));
  return object;
}

CjsonPtr SubscriptionJson(const Subscription& subscription) {
  CjsonPtr object = NewJsonObject();
  AddString(object.get(), "filter", subscription.filter);
  AddNumber(object.get(), "qos", subscription.qos);
  AddString(object.get(), "pattern", PatternName(subscription.mapping.pattern));
  AddString(object.get(), "channel", subscription.mapping.channel);
  AddString(object.get(), "sharedGroup", subscription.mapping.shared_group);
  AddStringIfSet(object.get(), "mappingError", subscription.mapping.error);
  return object;
}

CjsonPtr ConnectionJson(const Connection& connection) {
  // The enum fields of the filter's table, looked up once.
  static const FieldDef* const kStateField = FindField("state");
  static const FieldDef* const kCloseReasonField = FindField("close_reason");
  static const FieldDef* const kMechanismField = FindField("authentication_info.mechanism");
  static const FieldDef* const kAuthStateField = FindField("authentication_info.state");

  CjsonPtr object = NewJsonObject();
  cJSON* o = object.get();
  AddNumber(o, "nodeId", connection.node_id);
  AddString(o, "uid", connection.uid);
  AddToJsonObject(o, "state", EnumJson(kStateField, static_cast<std::int64_t>(connection.state)));
  AddString(o, "openTime", FormatRfc3339Nanos(connection.open_time_ns));
  const bool closed = connection.state == ConnectionState::kClosed;
  if (closed && connection.close_time_ns != 0) {
    AddString(o, "closeTime", FormatRfc3339Nanos(connection.close_time_ns));
  }
  if (connection.state == ConnectionState::kOffline && connection.session_expiry_time_ns != 0) {
    AddString(o, "sessionExpiryTime", FormatRfc3339Nanos(connection.session_expiry_time_ns));
  }
  if (closed) {
    AddToJsonObject(
        o, "closeReason",
        EnumJson(kCloseReasonField, static_cast<std::int64_t>(connection.close_reason)));
  }
  AddString(o, "clientId", connection.client_id);
  AddStringIfSet(o, "username", connection.username);
  AddNumber(o, "protocolVersion", connection.protocol_version);
  AddToJsonObject(o, "cleanSession", NewJsonBool(connection.clean_session));
  AddNumber(o, "keepAlive", connection.keep_alive);

  CjsonPtr source = NewJsonObject();
  AddStringIfSet(source.get(), "ipAddress", connection.ip_address);
  if (connection.port != 0) AddNumber(source.get(), "port", connection.port);
  AddToJsonObject(o, "source", std::move(source));
  AddStringIfSet(o, "listenerName", connection.listener_name);

  CjsonPtr tls = NewJsonObject();
  AddToJsonObject(tls.get(), "enabled", NewJsonBool(connection.tls.enabled));
  AddStringIfSet(tls.get(), "tlsVersion", connection.tls.tls_version);
  AddStringIfSet(tls.get(), "cipher", connection.tls.cipher);
  AddStringIfSet(tls.get(), "peerCertificateSubject", connection.tls.peer_certificate_subject);
  AddToJsonObject(o, "tlsInfo", std::move(tls));

  CjsonPtr authentication = NewJsonObject();
  AddToJsonObject(
      authentication.get(), "mechanism",
      EnumJson(kMechanismField, static_cast<std::int64_t>(connection.authentication.mechanism)));
  AddToJsonObject(
      authentication.get(), "state",
      EnumJson(kAuthStateField, static_cast<std::int64_t>(connection.authentication.state)));
  AddStringIfSet(authentication.get(), "userPrincipal", connection.authentication.user_principal);
  AddStringIfSet(authentication.get(), "method", connection.authentication.method);
  AddToJsonObject(o, "authenticationInfo", std::move(authentication));

  CjsonPtr subscriptions = NewJsonArray();
  for (const Subscription& subscription : connection.subscriptions) {
    AddToJsonArray(subscriptions.get(), SubscriptionJson(subscription));
  }
  AddToJsonObject(o, "subscriptions", std::move(subscriptions));
  if (connection.idle_ns >= 0) AddString(o, "idleDuration", FormatDuration(connection.idle_ns));
  AddToJsonObject(o, "totalRequestStatistics", StatisticsJson(connection.total_statistics));
  AddToJsonObject(o, "recentRequestStatistics", StatisticsJson(connection.recent_statistics));
  return object;
}

CjsonPtr ListConnectionsResponseJson(const ConnectionPage& page) {
  CjsonPtr object = NewJsonObject();
  CjsonPtr connections = NewJsonArray();
  for (const Connection& connection : page.connections) {
    AddToJsonArray(connections.get(), ConnectionJson(connection));
  }
  AddToJsonObject(object.get(), "connections", std::move(connections));
  AddString(object.get(), "totalSize", std::to_string(page.total_size));
  AddStringIfSet(object.get(), "nextPageToken", page.next_page_token);
  return object;
}

// --- the call ------------------------------------------------------------------------------

// Whether the budget is used up; if so, *error is the answer.
bool DeadlineExceeded(std::optional<Milliseconds> budget,
                      std::chrono::steady_clock::duration elapsed, HttpResponse* error) {
  if (!budget || elapsed < *budget) return false;
  const auto elapsed_ms = std::chrono::duration_cast<Milliseconds>(elapsed).count();
  *error =
      ConnectRpcError(kDeadlineExceeded, "deadline exceeded: " + HeaderName(kTimeout) + " allows " +
                                             std::to_string(budget->count()) + " ms, " +
                                             std::to_string(elapsed_ms) + " ms have passed");
  return true;
}

}  // namespace

ConnectRpcService::ConnectRpcService(const ConnectionSource& source,
                                     ConnectRpcServiceOptions options)
    : source_(source),
      clock_(options.clock ? std::move(options.clock) : ConnectRpcServiceOptions::Clock([] {
        return std::chrono::steady_clock::now();
      })) {}

HttpResponse ConnectRpcService::Handle(const std::string& method,
                                       const HttpRequest& request) const noexcept {
  try {
    if (method != kListConnections) {
      return ConnectRpcError(
          kUnimplemented, "method " + QuoteForMessage(method) +
                              " is not implemented; implemented: " + std::string(kListConnections));
    }
    return HandleListConnections(request);
  } catch (const std::exception& e) {
    return InternalError(e.what());
  } catch (...) {
    return InternalError("unknown exception");
  }
}

ConnectRpcHandler ConnectRpcService::Handler() const {
  return [this](const std::string& method, const HttpRequest& request) {
    return Handle(method, request);
  };
}

HttpResponse ConnectRpcService::HandleListConnections(const HttpRequest& request) const {
  const auto start = clock_();
  HttpResponse error;
  std::optional<Milliseconds> budget;
  ListConnectionsRequest message;
  if (request.method == "POST") {
    if (!CheckContentType(request, &error) || !CheckProtocolVersion(request, &error) ||
        !ReadTimeout(request, &budget, &error) || !CheckContentEncoding(request, &error) ||
        !DecodeRequestMessage(request.body, "request body", &message, &error)) {
      return error;
    }
  } else if (IsGet(request)) {
    std::string text;
    if (!ReadGetMessage(request, &text, &error) || !ReadTimeout(request, &budget, &error) ||
        !DecodeRequestMessage(text, "query parameter 'message'", &message, &error)) {
      return error;
    }
  } else {
    // The router answers this before calling; kept so that Handle() stands on its own.
    error = ConnectRpcError(
        kUnimplemented,
        "method " + QuoteForMessage(request.method) + " is not allowed; allowed: GET, HEAD, POST",
        kHttpMethodNotAllowed);
    error.headers.emplace_back("Allow", "GET, HEAD, POST");
    return error;
  }
  // No snapshot for a call whose budget is already gone (Connect-Timeout-Ms: 0).
  if (DeadlineExceeded(budget, clock_() - start, &error)) return error;

  ConnectionQuery query;
  query.filter = std::move(message.filter);
  query.order_by = std::move(message.order_by);
  query.page_size = message.page_size;
  query.page_token = std::move(message.page_token);
  ConnectionPage page;
  const Status status = RunConnectionQuery(source_.Snapshot(), query, &page);
  if (!status.ok()) {
    return ConnectRpcError(status.code() == StatusCode::kInternal ? kInternal : kInvalidArgument,
                           status.message());
  }
  HttpResponse response = JsonResponse(kHttpOk, *ListConnectionsResponseJson(page));
  if (DeadlineExceeded(budget, clock_() - start, &error)) return error;
  return response;
}

}  // namespace mqc
