// SPDX-License-Identifier: BSD-3-Clause
// The KubeMQ list's connection objects (see kubemq_list_json.h). The member order, the
// remote_addr forms and what is left out are the view's (kubemq_view.cc says where the spec is
// silent); the escaping is link/json_string.h's.
#include "companion/http/kubemq_list_json.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "link/json_string.h"
#include "link/text_util.h"
#include "link/topic_mapping.h"

namespace mqc {
namespace {

// Room for the constant text and the numbers of one connection and of one subscription (each
// under half of it), beside what the strings may take.
constexpr std::size_t kConnectionFixedBytes = 256;
constexpr std::size_t kSubscriptionFixedBytes = 128;
// The buffer grows by at least this much at a time: the bytes resize zeroes are written next,
// while they are in the cache.
constexpr std::size_t kGrowthBytes = 64 * 1024;

// Room of this size or more is asked for huge pages (AdviseHugePages).
constexpr std::size_t kHugePageRoomBytes = 2 << 20;

// A big list's body is a block of its own (companion/main.cc maps every block above 256 KiB on
// its own), mapped afresh for each request: written page by page, 5.4 MB at 15,000 connections
// cost about 1,300 page faults, 2 to 3 ms of kernel time a request. With the advice the kernel
// fills the block's 2 MiB-aligned part in huge pages where it has them (transparent huge pages
// in "madvise" or "always" mode), a fault per 2 MiB; the block goes back whole when sent, so
// no huge page outlives the answer. Advice only: where it is refused, pages stay small. (In a
// process without that threshold, tests, a block this big may lie in glibc's heap instead,
// which the advice then marks as well: harmless there.)
void AdviseHugePages(std::string* out, std::size_t from) {
#ifdef MADV_HUGEPAGE
  static const long page_size = sysconf(_SC_PAGESIZE);
  if (out->capacity() - from < kHugePageRoomBytes || page_size <= 0) return;
  const auto page = static_cast<std::uintptr_t>(page_size);
  const auto start = reinterpret_cast<std::uintptr_t>(out->data() + from);
  const auto begin = (start + page - 1) / page * page;
  const auto end = reinterpret_cast<std::uintptr_t>(out->data() + out->capacity()) / page * page;
  (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)out;
  (void)from;
#endif
}

template <std::size_t N>
char* Put(char* out, const char (&text)[N]) {
  std::memcpy(out, text, N - 1);
  return out + N - 1;
}

// Text that is plain in a JSON string as it is (the pattern names, an RFC 3339 time): copied,
// not scanned.
char* PutPlain(char* out, std::string_view text) {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}

char* PutInt(char* out, int value) {
  if (value >= 0 && value <= 9) {
    *out = static_cast<char>('0' + value);
    return out + 1;
  }
  return std::to_chars(out, out + 11, value).ptr;
}

// The most bytes WriteConnection writes for `connection`.
std::size_t MaxBytes(const Connection& connection, std::size_t connected_at_size) {
  std::size_t chars = connection.client_id.size() + connection.ip_address.size() +
                      connection.username.size() + connected_at_size;
  std::size_t bytes = kConnectionFixedBytes;
  for (const Subscription& subscription : connection.subscriptions) {
    chars += subscription.filter.size() + PatternName(subscription.mapping.pattern).size() +
             subscription.mapping.channel.size() + subscription.mapping.shared_group->size();
    bytes += kSubscriptionFixedBytes;
  }
  return bytes + MaxJsonCharsBytes(chars);
}

// "ip:port", "[v6]:port", the address alone when the port is unknown, nothing when the
// address is: as a JSON string's content.
char* WriteRemoteAddress(const Connection& connection, char* out) {
  const std::string& ip = connection.ip_address;
  if (ip.empty()) return out;
  if (connection.port == 0) return WriteJsonChars(ip, out);
  const bool v6 = ip.find(':') != std::string::npos;
  if (v6) *out++ = '[';
  out = WriteJsonChars(ip, out);
  if (v6) *out++ = ']';
  *out++ = ':';
  return PutInt(out, connection.port);
}

char* WriteSubscription(const Subscription& subscription, char* out) {
  out = Put(out, "{\"filter\":\"");
  out = WriteJsonChars(subscription.filter, out);
  out = Put(out, "\",\"qos\":");
  out = PutInt(out, subscription.qos);
  out = Put(out, ",\"pattern\":\"");
  out = PutPlain(out, PatternName(subscription.mapping.pattern));
  out = Put(out, "\",\"channel\":\"");
  out = WriteJsonChars(subscription.mapping.channel, out);
  out = Put(out, "\",\"shared_group\":\"");
  out = WriteJsonChars(*subscription.mapping.shared_group, out);
  return Put(out, "\"}");
}

char* WriteConnection(const Connection& connection, std::string_view connected_at, char* out) {
  out = Put(out, "{\"client_id\":\"");
  out = WriteJsonChars(connection.client_id, out);
  out = Put(out, "\",\"protocol_version\":");
  out = PutInt(out, connection.protocol_version);
  out = Put(out, ",\"remote_addr\":\"");
  out = WriteRemoteAddress(connection, out);
  out = Put(out, "\",\"connected_at\":\"");
  out = PutPlain(out, connected_at);
  out = connection.clean_session ? Put(out, "\",\"clean_session\":true")
                                 : Put(out, "\",\"clean_session\":false");
  if (!connection.username.empty()) {
    out = Put(out, ",\"username\":\"");
    out = WriteJsonChars(connection.username, out);
    *out++ = '"';
  }
  out = Put(out, ",\"subscriptions\":[");
  bool first = true;
  for (const Subscription& subscription : connection.subscriptions) {
    if (!first) *out++ = ',';
    first = false;
    out = WriteSubscription(subscription, out);
  }
  return Put(out, "]}");
}

}  // namespace

void AppendKubeMqConnections(const std::vector<ConnectionPtr>& connections, std::string* out) {
  // Written in place past the end: `end` is where the text ends, out->size() how far the room
  // reaches; the room left over is cut at the end.
  std::size_t end = out->size();
  AdviseHugePages(out, end);
  // connected_at of the previous second: a list is in connected_at order.
  std::int64_t second = -1;
  std::string connected_at;
  for (const ConnectionPtr& connection : connections) {
    const std::int64_t open_second =
        connection->open_time_ns - connection->open_time_ns % 1000000000;
    if (open_second != second || connected_at.empty()) {
      connected_at = FormatRfc3339Seconds(connection->open_time_ns);
      second = open_second;
    }
    const std::size_t room = 1 + MaxBytes(*connection, connected_at.size());
    if (out->size() - end < room) {
      const char* const before = out->data();
      out->resize(end + std::max(room, kGrowthBytes));
      if (out->data() != before) AdviseHugePages(out, end);  // a new block
    }
    char* const start = out->data() + end;
    char* next = start;
    if (&connection != connections.data()) *next++ = ',';
    next = WriteConnection(*connection, connected_at, next);
    end += static_cast<std::size_t>(next - start);
  }
  out->resize(end);
}

}  // namespace mqc
