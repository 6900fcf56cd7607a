// SPDX-License-Identifier: BSD-3-Clause
// The persistence file reader against a file Mosquitto 2.0.11 wrote (tests/data/README.md), and
// against truncated and corrupted copies of it.
#include "broker/persistence_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace mqc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::size_t kHeaderSize = 23;

std::string RealFile() {
  std::ifstream in(std::string(MQC_TEST_DATA_DIR) + "/mosquitto-2.0.11.db", std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Where each chunk of `bytes` starts, and where the last one ends.
std::vector<std::size_t> ChunkBoundaries(const std::string& bytes) {
  std::vector<std::size_t> boundaries;
  std::size_t position = kHeaderSize;
  while (position + 8 <= bytes.size()) {
    boundaries.push_back(position);
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + position + 4);
    const std::size_t length =
        (std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16) | (std::size_t{p[2]} << 8) | p[3];
    position += 8 + length;
  }
  boundaries.push_back(position);
  return boundaries;
}

// The offset of the first chunk of `type`.
std::size_t FindChunk(const std::string& bytes, unsigned char type) {
  for (std::size_t start : ChunkBoundaries(bytes)) {
    if (start + 8 <= bytes.size() && static_cast<unsigned char>(bytes[start + 3]) == type) {
      return start;
    }
  }
  ADD_FAILURE() << "no chunk of type " << int{type};
  return 0;
}

StatusOr<std::vector<PersistedSession>> Read(
    const std::string& bytes, const PersistenceLimits& limits = PersistenceLimits{}) {
  std::istringstream in(bytes);
  return ReadPersistedSessions(in, limits);
}

void ExpectRefused(const std::string& bytes, const std::string& message,
                   const PersistenceLimits& limits = PersistenceLimits{},
                   StatusCode code = StatusCode::kInvalidArgument) {
  const StatusOr<std::vector<PersistedSession>> read = Read(bytes, limits);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), code);
  EXPECT_THAT(read.status().message(), HasSubstr(message));
}

TEST(PersistenceFileTest, ReadsTheSessionsMosquittoWrote) {
  const std::string bytes = RealFile();
  ASSERT_EQ(bytes.size(), 402u);
  const StatusOr<std::vector<PersistedSession>> read = Read(bytes);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const std::vector<PersistedSession>& sessions = *read;
  // The clean publisher left no session; the shared subscription is not saved by 2.0.
  ASSERT_EQ(sessions.size(), 2u);
  const PersistedSession& v4 = sessions[0];
  EXPECT_EQ(v4.client_id, "db-v4");
  EXPECT_EQ(v4.username, "alice");
  EXPECT_EQ(v4.session_expiry_interval, 0xffffffffu);  // clean session false: never expires
  EXPECT_EQ(v4.session_expiry_time, 0);
  ASSERT_EQ(v4.subscriptions.size(), 2u);
  EXPECT_EQ(v4.subscriptions[0].filter, "events/a/#");
  EXPECT_EQ(v4.subscriptions[0].qos, 1);
  EXPECT_EQ(v4.subscriptions[1].filter, "queues/jobs");
  EXPECT_EQ(v4.subscriptions[1].qos, 2);

  const PersistedSession& v5 = sessions[1];
  EXPECT_EQ(v5.client_id, "db-v5");
  EXPECT_EQ(v5.username, "bob");
  EXPECT_EQ(v5.session_expiry_interval, 3600u);
  // Written at its disconnect: then + 3600 s (the file was made on 2026-12-01).
  EXPECT_GT(v5.session_expiry_time, 1796000000);
  EXPECT_LT(v5.session_expiry_time, 1797000000);
  ASSERT_EQ(v5.subscriptions.size(), 1u);
  EXPECT_EQ(v5.subscriptions[0].filter, "commands/door");
  EXPECT_EQ(v5.subscriptions[0].qos, 0);
  EXPECT_EQ(v5.subscriptions[0].identifier, 7u);
}

TEST(PersistenceFileTest, EveryTruncationInsideAChunkIsRefused) {
  const std::string bytes = RealFile();
  const std::vector<std::size_t> boundaries = ChunkBoundaries(bytes);
  ASSERT_EQ(boundaries.back(), bytes.size());
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    SCOPED_TRACE(size);
    const std::string cut = bytes.substr(0, size);
    if (size < kHeaderSize) {
      ExpectRefused(cut, "file header");
    } else if (std::find(boundaries.begin(), boundaries.end(), size) == boundaries.end()) {
      ExpectRefused(cut, "truncated");
    } else {
      // Cut between two chunks: a well-formed (shorter) file, as the broker would read it too.
      const StatusOr<std::vector<PersistedSession>> read = Read(cut);
      EXPECT_TRUE(read.ok()) << read.status().message();
    }
  }
}

TEST(PersistenceFileTest, RefusesAnotherFormatOrVersion) {
  std::string bytes = RealFile();
  std::string magic = bytes;
  magic[4] = 'X';
  ExpectRefused(magic, "not a Mosquitto persistence file");
  for (int version : {5, 7}) {
    std::string other = bytes;
    other[22] = static_cast<char>(version);
    ExpectRefused(other, "format version " + std::to_string(version));
  }
  ExpectRefused("", "shorter than the 23-byte file header");
}

TEST(PersistenceFileTest, TheCrcFieldIsNotChecked) {
  // Mosquitto 2.0 writes 0 there and never reads it back: there is no CRC to check.
  std::string bytes = RealFile();
  for (std::size_t i = 15; i < 19; ++i) bytes[i] = '\x5a';
  const StatusOr<std::vector<PersistedSession>> read = Read(bytes);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const std::vector<PersistedSession>& sessions = *read;
  EXPECT_EQ(sessions.size(), 2u);
}

TEST(PersistenceFileTest, RefusesLengthsThatDisagree) {
  const std::string bytes = RealFile();
  const std::size_t client = FindChunk(bytes, 6);
  std::string id_len = bytes;
  id_len[client + 8 + 15] = static_cast<char>(id_len[client + 8 + 15] + 1);
  ExpectRefused(id_len, "does not hold its 6-byte client id");

  const std::size_t sub = FindChunk(bytes, 5);
  std::string topic_len = bytes;
  topic_len[sub + 8 + 7] = static_cast<char>(topic_len[sub + 8 + 7] - 1);
  ExpectRefused(topic_len, "SUB chunk of 27 bytes");

  std::string qos = bytes;
  qos[sub + 8 + 8] = 3;
  ExpectRefused(qos, "QoS 3");

  std::string short_chunk = bytes;
  short_chunk[sub + 7] = 4;  // shorter than the fixed part of a SUB chunk
  ExpectRefused(short_chunk, "bad length 4 of a SUB chunk");

  std::string huge = bytes;
  huge[client + 4] = '\x7f';  // announces more than the file holds
  ExpectRefused(huge, "truncated chunk");
}

TEST(PersistenceFileTest, SkipsChunksItDoesNotRead) {
  // An unknown chunk type is skipped by its length, as the broker does.
  std::string bytes = RealFile();
  const std::string unknown("\x00\x00\x00\x63\x00\x00\x00\x03xyz", 11);
  bytes.insert(kHeaderSize, unknown);
  const StatusOr<std::vector<PersistedSession>> read = Read(bytes);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const std::vector<PersistedSession>& sessions = *read;
  EXPECT_EQ(sessions.size(), 2u);
}

// From 2.0.19 the broker ignores a SUB chunk without a client id or topic filter, with a warning,
// and restores the rest (src/persist_read.c: persist__restore_sub); so does this reader.
TEST(PersistenceFileTest, ASubChunkWithoutClientIdOrFilterIsSkippedAsTheBrokerDoes) {
  std::string bytes = RealFile();
  const std::string no_client(
      "\x00\x00\x00\x05\x00\x00\x00\x0f"  // SUB, 15 bytes
      "\x00\x00\x00\x00\x00\x00\x00\x03\x01\x00\x00\x00"
      "abc",
      23);
  const std::string no_filter(
      "\x00\x00\x00\x05\x00\x00\x00\x0f"
      "\x00\x00\x00\x00\x00\x03\x00\x00\x01\x00\x00\x00"
      "xyz",
      23);
  bytes.insert(kHeaderSize, no_client + no_filter);
  const StatusOr<std::vector<PersistedSession>> read = Read(bytes);
  ASSERT_TRUE(read.ok()) << read.status().message();
  const std::vector<PersistedSession>& sessions = *read;
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[0].client_id, "db-v4");
  EXPECT_EQ(sessions[0].subscriptions.size(), 2u);
}

TEST(PersistenceFileTest, RefusesMoreThanItsLimits) {
  const std::string bytes = RealFile();
  PersistenceLimits sessions;
  sessions.max_sessions = 1;
  ExpectRefused(bytes, "more than 1 sessions", sessions, StatusCode::kResourceExhausted);
  PersistenceLimits subscriptions;
  subscriptions.max_subscriptions = 2;
  ExpectRefused(bytes, "more than 2 subscriptions", subscriptions, StatusCode::kResourceExhausted);
  PersistenceLimits chunks;
  chunks.max_chunks = 5;
  ExpectRefused(bytes, "more than 5 chunks", chunks, StatusCode::kResourceExhausted);
}

TEST(PersistenceFileTest, AnyCorruptedByteIsReadOrRefusedSafely) {
  // Every byte replaced by a few values: the reader never reads out of bounds (ASan), and
  // what it accepts still has a client id on every session.
  const std::string bytes = RealFile();
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (int value : {0x00, 0x01, 0x7f, 0xff}) {
      std::string copy = bytes;
      copy[i] = static_cast<char>(value);
      const StatusOr<std::vector<PersistedSession>> read = Read(copy);
      if (read.ok()) {
        for (const auto& session : *read) EXPECT_FALSE(session.client_id.empty());
      } else {
        EXPECT_FALSE(read.status().message().empty());
      }
    }
  }
}

TEST(PersistenceFileTest, AMissingFileIsNoError) {
  StatusOr<PersistenceFile> file =
      ReadPersistenceFile("/nonexistent/mosquitto.db", PersistenceLimits{});
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_TRUE(file->missing);
  EXPECT_TRUE(file->sessions.empty());
  file = ReadPersistenceFile(std::string(MQC_TEST_DATA_DIR) + "/mosquitto-2.0.11.db",
                             PersistenceLimits{});
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_FALSE(file->missing);
  ASSERT_EQ(file->sessions.size(), 2u);
  EXPECT_THAT(std::vector<std::string>({file->sessions[0].client_id, file->sessions[1].client_id}),
              ElementsAre("db-v4", "db-v5"));
}

TEST(PersistenceFileTest, ARefusedFileIsNamedInTheMessage) {
  const std::string path =
      ::testing::TempDir() + "persistence-file-test-" + std::to_string(::getpid()) + ".db";
  std::ofstream(path, std::ios::binary) << "not a db";
  const StatusOr<PersistenceFile> file = ReadPersistenceFile(path, PersistenceLimits{});
  std::remove(path.c_str());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(file.status().message(), path + ": at byte 0: shorter than the 23-byte file header");
}

}  // namespace
}  // namespace mqc
