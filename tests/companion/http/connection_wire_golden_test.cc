// SPDX-License-Identifier: BSD-3-Clause
// A connection with every field of the schema set, in each state, written by both Connect
// encoders and compared byte for byte with tests/data/connection_wire_answers.txt: the JSON text
// and the binary protobuf (hex), one a line. The file was written by the codecs before they were
// made from the field table (companion/connection_field_table.h), so this keeps the wire the
// same; MQC_WRITE_ANSWERS=1 rewrites it when the wire is meant to change.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../../support/connection_builder.h"
#include "companion/connection.h"
#include "companion/http/connect_rpc_json.h"
#include "companion/http/connect_rpc_proto.h"
#include "companion/query/connection_query.h"

namespace mqc {
namespace {

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (const char byte : bytes) {
    hex += kDigits[static_cast<unsigned char>(byte) >> 4];
    hex += kDigits[static_cast<unsigned char>(byte) & 15];
  }
  return hex;
}

// Each state's page of one connection with every field, then one with none but the defaults.
std::string Answers() {
  std::string text;
  ConnectionPage page;
  for (const ConnectionState state : {ConnectionState::kOpen, ConnectionState::kClosed,
                                      ConnectionState::kOffline, ConnectionState::kUnspecified}) {
    page.connections = {EveryFieldConnection(state)};
    page.total_size = 1;
    text += ListConnectionsResponseJson(page) + '\n';
    text += Hex(EncodeListConnectionsResponseProto(page)) + '\n';
  }
  page.connections = {Connection()};
  text += ListConnectionsResponseJson(page) + '\n';
  text += Hex(EncodeListConnectionsResponseProto(page)) + '\n';
  return text;
}

TEST(ConnectionWireGoldenTest, EveryFieldIsWrittenAsBefore) {
  const std::string path = std::string(MQC_TEST_DATA_DIR) + "/connection_wire_answers.txt";
  const std::string actual = Answers();
  if (std::getenv("MQC_WRITE_ANSWERS") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream file(path, std::ios::binary);
  ASSERT_TRUE(file.good()) << "cannot read " << path;
  std::stringstream expected;
  expected << file.rdbuf();
  std::istringstream expected_lines(expected.str());
  std::istringstream actual_lines(actual);
  std::string e;
  std::string a;
  for (int line = 1; std::getline(expected_lines, e); ++line) {
    ASSERT_TRUE(std::getline(actual_lines, a)) << "line " << line << " missing";
    EXPECT_EQ(a, e) << "line " << line;
  }
  EXPECT_FALSE(std::getline(actual_lines, a)) << "more lines than expected";
}

}  // namespace
}  // namespace mqc
