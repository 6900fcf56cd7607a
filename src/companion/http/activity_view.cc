// SPDX-License-Identifier: BSD-3-Clause
#include "companion/http/activity_view.h"

#include <cjson/cJSON.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "companion/http/connect_codec.h"
#include "companion/http/connect_protocol.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/http/view_util.h"
#include "companion/json_util.h"
#include "companion/json_writer.h"
#include "companion/query/connection_fields.h"
#include "link/text_util.h"

namespace mqc {
namespace {

void WriteCount(std::string_view key, std::uint64_t value, JsonWriter* json) {
  if (value != 0) json->Key(key).Int(static_cast<std::int64_t>(ActivityCount(value)));
}

void WriteSample(const ActivitySample& sample, JsonWriter* json) {
  static const FieldDef* const kCloseReasonField = FindField("close_reason");
  json->BeginObject();
  json->Key("time").String(FormatRfc3339Nanos(sample.end_ns));
  json->Key("seconds").Int(sample.seconds);
  WriteCount("openConnections", sample.open_connections, json);
  WriteCount("connects", sample.connects, json);
  WriteCount("connectsRefused", sample.connects_refused, json);
  bool any = false;
  for (std::size_t reason = 0; reason < 8; ++reason) {
    if (sample.disconnects[reason] == 0) continue;
    if (!any) json->Key("disconnects").BeginObject();
    any = true;
    WriteCount(ResponseEnumName(*kCloseReasonField, static_cast<std::int64_t>(reason)),
               sample.disconnects[reason], json);
  }
  if (any) json->EndObject();
  WriteCount("messagesReceived", sample.messages_received, json);
  WriteCount("messagesDelivered", sample.messages_delivered, json);
  WriteCount("subscribesRefused", sample.subscribes_refused, json);
  WriteCount("publishesRefused", sample.publishes_refused, json);
  WriteCount("flappingClients", sample.flapping_clients, json);
  json->EndObject();
}

}  // namespace

HttpResponse ConnectRpcGetActivity(const ActivityHistory& activity, const HttpRequest& request) {
  HttpResponse error;
  ConnectCodec codec = ConnectCodec::kJson;
  if (!CheckConnectUnaryPost(request, &codec, &error)) return error;
  if (codec == ConnectCodec::kProto) {
    const Status read = DecodeGetActivityRequestProto(request.body, "request body");
    if (!read.ok()) return ConnectRpcErrorResponse(read);
  } else {
    const StatusOr<CjsonPtr> message = ParseBodyObject(request.body);
    if (!message.ok()) return ConnectRpcErrorResponse(message.status());
  }
  const std::vector<ActivitySample> samples = activity.Samples();
  const bool shown = activity.acl_denials_shown();
  const auto interval_s = static_cast<std::uint32_t>(activity.interval_ns() / 1'000'000'000);
  return ConnectRpcAnswer(
      codec, [&] { return EncodeGetActivityResponseProto(interval_s, samples, shown); },
      [&](JsonWriter* json) {
        json->Key("intervalSeconds").Int(interval_s);
        if (shown) json->Key("aclDenialsShown").Bool(true);
        json->Key("samples").BeginArray();
        for (const ActivitySample& sample : samples) WriteSample(sample, json);
        json->EndArray();
      });
}

}  // namespace mqc
