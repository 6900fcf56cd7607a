// SPDX-License-Identifier: BSD-3-Clause
// The persistent sessions in Mosquitto 2.0's own persistence file (mosquitto.db), read once at
// plugin start. The broker restores that file (db__open) before it loads plugins, so at the
// plugin's init the file on disk is the one the broker's sessions came from; the plugin API
// gives no other way to learn them.
//
// Format (Mosquitto 2.0 src/persist.h, version 6): 15 magic bytes, a 4-byte CRC field (always
// written as 0 and never checked by the broker, so there is nothing to check it against), a
// 4-byte version, then chunks of {u32 type, u32 length, body}. Integers are big-endian, except
// a client's session expiry time, which the broker writes in its own byte order (read here the
// same way: the plugin runs in that broker). Only CLIENT and SUB chunks are decoded; CFG,
// MSG_STORE, CLIENT_MSG, RETAIN and unknown chunks are skipped by their length.
//
// The file is read as a stream: memory grows with the sessions and subscriptions kept, never
// with queued or retained messages. Anything that does not follow the format (unknown version,
// a chunk longer than the file, lengths that disagree with the chunk's fields, more entries
// than the limits) refuses the whole file: no partial result.
//
// Threads: any; no shared state.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "link/status.h"

namespace mqc {

struct PersistedSubscription {
  std::string filter;
  std::uint8_t qos = 0;
  std::uint32_t identifier = 0;  // MQTT 5 subscription identifier; 0 none
  std::uint8_t options = 0;      // no local (bit 2), retain as published (bit 3)
};

struct PersistedSession {
  std::string client_id;
  std::string username;  // empty when none
  // Unix seconds after which the broker would expire the session; 0 when not set. Mosquitto
  // 2.0 sets it at a disconnect, and only for a session that can expire.
  std::int64_t session_expiry_time = 0;
  std::uint32_t session_expiry_interval = 0;  // seconds; 0xffffffff never expires
  std::vector<PersistedSubscription> subscriptions;
};

struct PersistenceLimits {
  std::size_t max_sessions = 100000;
  std::size_t max_subscriptions = 1000000;  // over all sessions
  std::uint64_t max_chunks = 50000000;      // every chunk walked, skipped ones included
};

// The version of the format this reader understands: what Mosquitto 2.0 writes.
inline constexpr std::uint32_t kPersistenceVersion = 6;

// Reads every persistent session from `in`, in file order (a client first named by a SUB chunk
// is a session too: the broker restores it so). A failure says what was wrong and where ("at
// byte N: ..."): kInvalidArgument when the bytes do not follow the format, kResourceExhausted
// when they hold more than `limits`, kUnavailable when the stream cannot be read.
StatusOr<std::vector<PersistedSession>> ReadPersistedSessions(std::istream& in,
                                                              const PersistenceLimits& limits);

// What ReadPersistenceFile found.
struct PersistenceFile {
  bool missing = false;  // no file: the broker has not saved one yet (no error)
  std::vector<PersistedSession> sessions;
};

// The same for the file at `path`, each message starting with the path. A file that exists but
// cannot be opened is kUnavailable; the other failures are ReadPersistedSessions's.
StatusOr<PersistenceFile> ReadPersistenceFile(const std::string& path,
                                              const PersistenceLimits& limits);

}  // namespace mqc
