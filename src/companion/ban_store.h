// SPDX-License-Identifier: BSD-3-Clause
// The ban list as the companion owns it: edited by the API (POST/DELETE /api/mqtt/bans and the
// BanClient/UnbanClient RPCs), kept in a file, and sent whole to the broker thread after every
// change (BansCommand), which refuses matching CONNECTs (broker/ban_gate.h).
//
// The file: `mosquitto-connections-bans.json` in the broker's persistence_location when the
// broker runs with persistence; without persistence the list lives in memory only (one log
// line says so at start). It is written by this process only, never by the broker thread,
// atomically: a temporary file beside it, fsync, rename. A file that does not parse stops the
// companion at start with a message naming the file and the fault (better than silently
// forgetting every ban).
//
// Threads: any (HTTP threads and the event loop): one mutex guards the list and the file.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "companion/json_writer.h"
#include "link/ban_list.h"
#include "link/status.h"

namespace mqc {

inline constexpr char kBanFileName[] = "mosquitto-connections-bans.json";

// Where the bans are kept for the broker's configuration: its persistence_location (or working
// directory) with persistence on, else empty (memory only).
std::string BanFilePath(bool persistence, const std::string& persistence_location);

// One ban's members as the file and the API write them: "as", "who", "by", "reason", "at",
// "until", with RFC 3339 times, until null for a ban without end. The caller opens and closes
// the object, so that an answer can add its own members ("kicked", "removed").
void WriteBanMembers(const Ban& ban, JsonWriter* json);

// {"version":1,"bans":[{WriteBanMembers}...]} and a newline.
std::string SerializeBans(const std::vector<Ban>& bans);
// kInvalidArgument with the position ("ban 3: who: ...") for anything out of shape.
Status ParseBans(std::string_view text, std::vector<Ban>* bans);
// Writes `text` to `path` through `path`.tmp, fsync and rename.
Status WriteFileAtomically(const std::string& path, const std::string& text);

class BanStore {
 public:
  // `path` empty: in memory only. `send` gets the whole list after every change (the broker's
  // copy); it returns false when it cannot be sent now (the change is then undone).
  BanStore(std::string path, std::function<bool(const std::vector<Ban>&)> send);

  // Reads the file (a missing file is an empty list) and drops the bans expired by `now_ns`.
  Status Load(std::int64_t now_ns);
  // Sends the current list (at the companion's start). False when `send` could not.
  bool SendAll();

  // Adds (or replaces: same `as` and `who`) a ban; kResourceExhausted beyond kMaxBans or when
  // the list cannot reach the broker, kInternal when the file cannot be written.
  Status Add(const Ban& ban, std::int64_t now_ns);
  // Removes the ban on that target; kNotFound when there is none (or it expired).
  Status Remove(const Ban& target, std::int64_t now_ns, Ban* removed);
  // The bans in force at `now_ns`.
  std::vector<Ban> List(std::int64_t now_ns) const;
  // Drops the bans expired by `now_ns` (file and broker); returns them.
  std::vector<Ban> Expire(std::int64_t now_ns);

  const std::string& path() const { return path_; }

 private:
  Status Commit(std::vector<Ban> next);  // file, then broker; *this only on success

  const std::string path_;
  const std::function<bool(const std::vector<Ban>&)> send_;
  mutable std::mutex mutex_;
  std::vector<Ban> bans_;  // guarded by mutex_
};

}  // namespace mqc
