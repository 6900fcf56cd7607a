// SPDX-License-Identifier: BSD-3-Clause
#include "broker/persistence_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <unordered_map>
#include <utility>

namespace mqc {

namespace {

constexpr unsigned char kMagic[15] = {0x00, 0xB5, 0x00, 'm', 'o', 's', 'q', 'u',
                                      'i',  't',  't',  'o', ' ', 'd', 'b'};
constexpr std::uint64_t kHeaderSize = sizeof(kMagic) + 4 + 4;  // magic, CRC field, version
constexpr std::uint32_t kChunkSub = 5;
constexpr std::uint32_t kChunkClient = 6;
// The fixed parts as the broker writes them: struct PF_client and struct PF_sub with their
// tail padding (persist.h).
constexpr std::uint32_t kClientFixed = 24;
constexpr std::uint32_t kSubFixed = 12;
// Both strings of a chunk are u16-counted: nothing longer can be a valid CLIENT or SUB chunk.
constexpr std::uint32_t kMaxStringsChunk = 2 * 65535;

std::uint16_t Be16(const unsigned char* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

std::uint32_t Be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// The broker reads each string into a NUL-terminated buffer and uses it as a C string.
std::string CString(const unsigned char* p, std::size_t size) {
  const void* nul = std::memchr(p, 0, size);
  const std::size_t used =
      nul != nullptr ? static_cast<std::size_t>(static_cast<const unsigned char*>(nul) - p) : size;
  return std::string(reinterpret_cast<const char*>(p), used);
}

class Reader {
 public:
  Reader(std::istream& in, const PersistenceLimits& limits) : in_(in), limits_(limits) {}

  StatusOr<std::vector<PersistedSession>> Read() {
    in_.seekg(0, std::ios::end);
    const std::streamoff end = in_.tellg();
    in_.seekg(0, std::ios::beg);
    if (!in_ || end < 0) return Fail(StatusCode::kUnavailable, 0, "cannot read the file");
    size_ = static_cast<std::uint64_t>(end);

    unsigned char header[kHeaderSize];
    if (size_ < kHeaderSize || !Bytes(header, kHeaderSize)) {
      return Fail(StatusCode::kInvalidArgument, 0,
                  "shorter than the " + std::to_string(kHeaderSize) + "-byte file header");
    }
    if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
      return Fail(StatusCode::kInvalidArgument, 0,
                  "not a Mosquitto persistence file (wrong magic bytes)");
    }
    const std::uint32_t version = Be32(header + sizeof(kMagic) + 4);
    if (version != kPersistenceVersion) {
      return Fail(StatusCode::kInvalidArgument, sizeof(kMagic) + 4,
                  "format version " + std::to_string(version) + ", this plugin reads version " +
                      std::to_string(kPersistenceVersion) + " (Mosquitto 2.0)");
    }

    std::uint64_t position = kHeaderSize;
    std::uint64_t chunks = 0;
    std::vector<unsigned char> body;
    while (position < size_) {
      if (++chunks > limits_.max_chunks) {
        return Fail(StatusCode::kResourceExhausted, position,
                    "more than " + std::to_string(limits_.max_chunks) + " chunks");
      }
      unsigned char chunk_header[8];
      if (size_ - position < sizeof(chunk_header)) {
        return Fail(StatusCode::kInvalidArgument, position, "truncated chunk header");
      }
      if (!Bytes(chunk_header, sizeof(chunk_header))) {
        return Fail(StatusCode::kUnavailable, position, "read error");
      }
      const std::uint32_t type = Be32(chunk_header);
      const std::uint32_t length = Be32(chunk_header + 4);
      const std::uint64_t body_start = position + sizeof(chunk_header);
      if (length > size_ - body_start) {
        return Fail(StatusCode::kInvalidArgument, position,
                    "truncated chunk: " + std::to_string(length) + " bytes announced, " +
                        std::to_string(size_ - body_start) + " left in the file");
      }
      if (type == kChunkClient || type == kChunkSub) {
        const std::uint32_t fixed = type == kChunkClient ? kClientFixed : kSubFixed;
        if (length < fixed || length > fixed + kMaxStringsChunk) {
          return Fail(
              StatusCode::kInvalidArgument, position,
              "bad length " + std::to_string(length) + " of a " + ChunkName(type) + " chunk");
        }
        body.resize(length);
        if (!Bytes(body.data(), length)) {
          return Fail(StatusCode::kUnavailable, position, "read error");
        }
        const Status chunk = type == kChunkClient ? Client(body) : Sub(body);
        if (!chunk.ok()) return Fail(chunk.code(), position, chunk.message());
      } else {
        in_.seekg(static_cast<std::streamoff>(length), std::ios::cur);
        if (!in_) return Fail(StatusCode::kUnavailable, position, "read error");
      }
      position = body_start + length;
    }
    return std::move(sessions_);
  }

 private:
  static std::string ChunkName(std::uint32_t type) {
    return type == kChunkClient ? "CLIENT" : "SUB";
  }

  bool Bytes(unsigned char* out, std::size_t count) {
    in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(count));
    return static_cast<std::size_t>(in_.gcount()) == count;
  }

  static Status Fail(StatusCode code, std::uint64_t offset, const std::string& what) {
    return Status(code, "at byte " + std::to_string(offset) + ": " + what);
  }

  // The session of `client_id`, added when new; null when the limit is reached.
  PersistedSession* Session(const std::string& client_id) {
    auto it = index_.find(client_id);
    if (it != index_.end()) return &sessions_[it->second];
    if (sessions_.size() >= limits_.max_sessions) return nullptr;
    index_.emplace(client_id, sessions_.size());
    sessions_.emplace_back();
    sessions_.back().client_id = client_id;
    return &sessions_.back();
  }

  Status Client(const std::vector<unsigned char>& body) {
    const unsigned char* p = body.data();
    std::int64_t expiry_time = 0;  // the broker's own byte order
    std::memcpy(&expiry_time, p, sizeof(expiry_time));
    const std::uint32_t interval = Be32(p + 8);
    const std::uint16_t id_len = Be16(p + 14);
    const std::uint16_t username_len = Be16(p + 18);
    if (std::uint64_t{kClientFixed} + id_len + username_len != body.size()) {
      return InvalidArgument("CLIENT chunk of " + std::to_string(body.size()) +
                             " bytes does not hold its " + std::to_string(id_len) +
                             "-byte client id and " + std::to_string(username_len) +
                             "-byte username");
    }
    const std::string client_id = CString(p + kClientFixed, id_len);
    // The broker skips a client with an empty id (with a warning), and so does this reader.
    if (client_id.empty()) return Status();
    PersistedSession* session = Session(client_id);
    if (session == nullptr) return TooManySessions();
    session->session_expiry_time = expiry_time;
    session->session_expiry_interval = interval;
    // Mosquitto 2.0.11 writes a client without a username after one with a username with the
    // earlier one's username and a byte-swapped length (persist__client_save reuses its
    // chunk); the broker restores that C string, and so does this reader.
    if (username_len > 0 && session->username.empty()) {
      session->username = CString(p + kClientFixed + id_len, username_len);
    }
    return Status();
  }

  Status Sub(const std::vector<unsigned char>& body) {
    const unsigned char* p = body.data();
    PersistedSubscription subscription;
    subscription.identifier = Be32(p);
    const std::uint16_t id_len = Be16(p + 4);
    const std::uint16_t topic_len = Be16(p + 6);
    subscription.qos = p[8];
    subscription.options = p[9];
    if (std::uint64_t{kSubFixed} + id_len + topic_len != body.size()) {
      return InvalidArgument("SUB chunk of " + std::to_string(body.size()) +
                             " bytes does not hold its " + std::to_string(id_len) +
                             "-byte client id and " + std::to_string(topic_len) +
                             "-byte topic filter");
    }
    if (subscription.qos > 2) {
      return InvalidArgument("SUB chunk with QoS " + std::to_string(subscription.qos));
    }
    const std::string client_id = CString(p + kSubFixed, id_len);
    subscription.filter = CString(p + kSubFixed + id_len, topic_len);
    // The broker ignores such a chunk and restores the rest (2.0.19 on; src/persist_read.c:
    // persist__restore_sub). Earlier brokers fail to restore the file at all.
    if (client_id.empty() || subscription.filter.empty()) return Status();
    if (++subscriptions_ > limits_.max_subscriptions) {
      return Status(StatusCode::kResourceExhausted,
                    "more than " + std::to_string(limits_.max_subscriptions) + " subscriptions");
    }
    PersistedSession* session = Session(client_id);
    if (session == nullptr) return TooManySessions();
    session->subscriptions.push_back(std::move(subscription));
    return Status();
  }

  Status TooManySessions() const {
    return Status(StatusCode::kResourceExhausted,
                  "more than " + std::to_string(limits_.max_sessions) + " sessions");
  }

  std::istream& in_;
  const PersistenceLimits& limits_;
  std::uint64_t size_ = 0;
  std::size_t subscriptions_ = 0;
  std::vector<PersistedSession> sessions_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace

StatusOr<std::vector<PersistedSession>> ReadPersistedSessions(std::istream& in,
                                                              const PersistenceLimits& limits) {
  return Reader(in, limits).Read();
}

StatusOr<PersistenceFile> ReadPersistenceFile(const std::string& path,
                                              const PersistenceLimits& limits) {
  PersistenceFile file;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) {
      file.missing = true;
      return file;
    }
    return Status(StatusCode::kUnavailable, path + ": cannot open it: " + std::strerror(errno));
  }
  StatusOr<std::vector<PersistedSession>> sessions = ReadPersistedSessions(in, limits);
  if (!sessions.ok()) {
    return Status(sessions.status().code(), path + ": " + sessions.status().message());
  }
  file.sessions = std::move(sessions).value();
  return file;
}

}  // namespace mqc
