// SPDX-License-Identifier: BSD-3-Clause
// See ban_store.h.
#include "companion/ban_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include "companion/json_util.h"
#include "companion/json_writer.h"
#include "link/text_util.h"

namespace mqc {
namespace {

// An optional string member: absent or null is empty.
Status ReadText(const cJSON* object, const char* field, std::size_t max_bytes, std::string* out) {
  const cJSON* value = cJSON_GetObjectItemCaseSensitive(object, field);
  out->clear();
  if (value == nullptr || cJSON_IsNull(value)) return Status();
  if (!cJSON_IsString(value)) return InvalidArgument(std::string(field) + ": must be a string");
  *out = value->valuestring;
  if (out->size() > max_bytes) {
    return InvalidArgument(std::string(field) + ": at most " + std::to_string(max_bytes) +
                           " bytes");
  }
  return Status();
}

Status ReadTime(const cJSON* object, const char* field, std::int64_t* ns) {
  std::string text;
  const Status read = ReadText(object, field, 64, &text);
  if (!read.ok()) return read;
  *ns = 0;
  if (text.empty()) return Status();
  const StatusOr<std::int64_t> parsed = ParseTimestamp(text);
  if (!parsed.ok()) {
    return InvalidArgument(std::string(field) + ": " + QuoteForMessage(text) + ": " +
                           parsed.status().message());
  }
  *ns = *parsed;
  return Status();
}

Status ParseOne(const cJSON* item, Ban* ban) {
  if (!cJSON_IsObject(item)) return InvalidArgument("not an object");
  std::string as;
  std::string who;
  Status status = ReadText(item, "as", 32, &as);
  if (status.ok()) status = ReadText(item, "who", kMaxBanWhoBytes, &who);
  if (status.ok()) status = ParseBanTarget(as, who, ban);
  if (status.ok()) status = ReadText(item, "by", kMaxBanTextBytes, &ban->by);
  if (status.ok()) status = ReadText(item, "reason", kMaxBanTextBytes, &ban->reason);
  if (status.ok()) status = ReadTime(item, "at", &ban->at_ns);
  if (status.ok()) status = ReadTime(item, "until", &ban->until_ns);
  return status;
}

}  // namespace

std::string BanFilePath(bool persistence, const std::string& persistence_location) {
  if (!persistence) return std::string();
  if (persistence_location.empty()) return kBanFileName;
  return persistence_location + (persistence_location.back() == '/' ? "" : "/") + kBanFileName;
}

void WriteBanMembers(const Ban& ban, JsonWriter* json) {
  json->Key("as").String(ban.as());
  json->Key("who").String(ban.who);
  json->Key("by").String(ban.by);
  json->Key("reason").String(ban.reason);
  json->Key("at").String(FormatRfc3339Seconds(ban.at_ns));
  json->Key("until");
  if (ban.until_ns == 0) {
    json->Null();
  } else {
    json->String(FormatRfc3339Seconds(ban.until_ns));
  }
}

std::string SerializeBans(const std::vector<Ban>& bans) {
  std::string text;
  JsonWriter json(&text);
  json.BeginObject().Key("version").Int(1).Key("bans").BeginArray();
  for (const Ban& ban : bans) {
    json.BeginObject();
    WriteBanMembers(ban, &json);
    json.EndObject();
  }
  json.EndArray().EndObject();
  return text + "\n";
}

Status ParseBans(std::string_view text, std::vector<Ban>* bans) {
  const CjsonPtr root = ParseJson(text);
  if (!root || !cJSON_IsObject(root.get())) return InvalidArgument("not a JSON object");
  const cJSON* version = cJSON_GetObjectItemCaseSensitive(root.get(), "version");
  if (!cJSON_IsNumber(version) || version->valuedouble != 1) {
    return InvalidArgument("'version' must be 1");
  }
  const cJSON* list = cJSON_GetObjectItemCaseSensitive(root.get(), "bans");
  if (!cJSON_IsArray(list)) return InvalidArgument("'bans' must be an array");
  std::vector<Ban> read;
  std::size_t index = 0;
  for (const cJSON* item = list->child; item != nullptr; item = item->next, ++index) {
    if (read.size() >= kMaxBans) {
      return InvalidArgument("more than " + std::to_string(kMaxBans) + " bans");
    }
    Ban ban;
    const Status status = ParseOne(item, &ban);
    if (!status.ok())
      return InvalidArgument("ban " + std::to_string(index) + ": " + status.message());
    for (Ban& earlier : read) {
      if (SameTarget(earlier, ban)) {
        return InvalidArgument("ban " + std::to_string(index) + ": " + ban.Describe() +
                               " is listed twice");
      }
    }
    read.push_back(std::move(ban));
  }
  *bans = std::move(read);
  return Status();
}

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status(StatusCode::kInternal, "cannot write " + temporary + ": " + std::strerror(errno));
  }
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      close(fd);
      unlink(temporary.c_str());
      return Status(StatusCode::kInternal,
                    "cannot write " + temporary + ": " + std::strerror(error));
    }
    written += static_cast<std::size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    const int error = errno;
    unlink(temporary.c_str());
    return Status(StatusCode::kInternal, "cannot write " + temporary + ": " + std::strerror(error));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(temporary.c_str());
    return Status(StatusCode::kInternal,
                  "cannot rename " + temporary + " to " + path + ": " + std::strerror(error));
  }
  return Status();
}

BanStore::BanStore(std::string path, std::function<bool(const std::vector<Ban>&)> send)
    : path_(std::move(path)), send_(std::move(send)) {}

Status BanStore::Load(std::int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  bans_.clear();
  if (path_.empty()) return Status();
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return Status();
    return Status(StatusCode::kInternal,
                  "ban file " + path_ + ": cannot read it: " + std::strerror(errno));
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Ban> read;
  const Status parsed = ParseBans(text, &read);
  if (!parsed.ok()) {
    return Status(StatusCode::kInvalidArgument,
                  "ban file " + path_ + ": " + parsed.message() +
                      " (fix or remove it; the companion does not start without its bans)");
  }
  for (Ban& ban : read) {
    if (!ban.expired(now_ns)) bans_.push_back(std::move(ban));
  }
  return Status();
}

bool BanStore::SendAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  return send_(bans_);
}

Status BanStore::Commit(std::vector<Ban> next) {
  if (!path_.empty()) {
    const Status written = WriteFileAtomically(path_, SerializeBans(next));
    if (!written.ok()) return written;
  }
  if (!send_(next)) {
    // The broker keeps the list it had: so does the file.
    if (!path_.empty()) (void)WriteFileAtomically(path_, SerializeBans(bans_));
    return Status(StatusCode::kResourceExhausted, "the broker's request queue is full");
  }
  bans_ = std::move(next);
  return Status();
}

Status BanStore::Add(const Ban& ban, std::int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Ban> next;
  next.reserve(bans_.size() + 1);
  for (const Ban& old : bans_) {
    if (!old.expired(now_ns) && !SameTarget(old, ban)) next.push_back(old);
  }
  if (next.size() >= kMaxBans) {
    return Status(StatusCode::kResourceExhausted,
                  "at most " + std::to_string(kMaxBans) + " bans; remove one first");
  }
  next.push_back(ban);
  return Commit(std::move(next));
}

Status BanStore::Remove(const Ban& target, std::int64_t now_ns, Ban* removed) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Ban> next;
  bool found = false;
  for (const Ban& old : bans_) {
    if (old.expired(now_ns)) continue;
    if (SameTarget(old, target)) {
      found = true;
      *removed = old;
    } else {
      next.push_back(old);
    }
  }
  if (!found) {
    return Status(StatusCode::kNotFound, "no ban on " + target.Describe());
  }
  return Commit(std::move(next));
}

std::vector<Ban> BanStore::List(std::int64_t now_ns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Ban> out;
  for (const Ban& ban : bans_) {
    if (!ban.expired(now_ns)) out.push_back(ban);
  }
  return out;
}

std::vector<Ban> BanStore::Expire(std::int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Ban> expired;
  std::vector<Ban> next;
  for (const Ban& ban : bans_) {
    (ban.expired(now_ns) ? expired : next).push_back(ban);
  }
  if (expired.empty()) return expired;
  // Not sent now (a full ring): the broker skips expired bans anyway; tried again next time.
  if (!Commit(std::move(next)).ok()) return {};
  return expired;
}

}  // namespace mqc
