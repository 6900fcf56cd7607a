// SPDX-License-Identifier: BSD-3-Clause
// The field table (connection_field_table.h) against the schema as protoc read
// proto/mqtt/connections/v1/connections.proto: every field of the Connection message is a row
// with its name, JSON name, number, label and type, and every row is a field. A field added to
// the .proto and not to the table, or the other way round, fails here.
#include "companion/connection_field_table.h"

#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "mqtt/connections/v1/connections.pb.h"

namespace mqc {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

std::string TypeName(const FieldDescriptor& field) {
  if (field.message_type() != nullptr) {
    const std::string& full = field.message_type()->full_name();
    // The schema's own messages are named without their package, as the .proto writes them.
    const std::string package = field.file()->package() + ".";
    return full.rfind(package, 0) == 0 ? full.substr(package.size()) : full;
  }
  if (field.enum_type() != nullptr) return field.enum_type()->name();
  return field.type_name();
}

std::string Label(const FieldDescriptor& field) {
  if (field.is_repeated()) return "repeated";
  if (field.has_optional_keyword()) return "optional";
  return "singular";
}

// What differs between `rows` and the message `schema`, one line each; empty when they agree.
std::vector<std::string> Mismatches(const std::vector<ConnectionFieldRow>& rows,
                                    const Descriptor& schema) {
  std::vector<std::string> found;
  std::set<std::string> named;
  for (const ConnectionFieldRow& row : rows) {
    const std::string name(row.name);
    named.insert(name);
    const FieldDescriptor* field = schema.FindFieldByName(name);
    if (field == nullptr) {
      found.push_back(name + ": in the table, not in the schema");
      continue;
    }
    if (field->number() != row.number) {
      found.push_back(name + ": number " + std::to_string(row.number) + " in the table, " +
                      std::to_string(field->number()) + " in the schema");
    }
    if (field->json_name() != row.json_name) {
      found.push_back(name + ": JSON name " + std::string(row.json_name) + " in the table, " +
                      field->json_name() + " in the schema");
    }
    if (TypeName(*field) != row.proto_type) {
      found.push_back(name + ": type " + std::string(row.proto_type) + " in the table, " +
                      TypeName(*field) + " in the schema");
    }
    if (Label(*field) != row.label) {
      found.push_back(name + ": " + std::string(row.label) + " in the table, " + Label(*field) +
                      " in the schema");
    }
  }
  for (int i = 0; i < schema.field_count(); ++i) {
    if (named.count(schema.field(i)->name()) == 0) {
      found.push_back(schema.field(i)->name() + ": in the schema, not in the table");
    }
  }
  if (named.size() != rows.size()) found.push_back("a field is in the table twice");
  return found;
}

const Descriptor& ConnectionSchema() { return *mqtt::connections::v1::Connection::descriptor(); }

std::vector<ConnectionFieldRow> Table() {
  return {std::begin(kConnectionFieldRows), std::end(kConnectionFieldRows)};
}

TEST(ConnectionFieldTableTest, EveryFieldOfTheSchemaIsARowAndAgrees) {
  EXPECT_EQ(Mismatches(Table(), ConnectionSchema()), std::vector<std::string>());
}

// The check itself finds each kind of difference.
TEST(ConnectionFieldTableTest, TheCheckFindsEachKindOfMismatch) {
  const auto with = [](const char* name, auto change) {
    std::vector<ConnectionFieldRow> rows = Table();
    for (ConnectionFieldRow& row : rows) {
      if (row.name == name) change(&row);
    }
    return Mismatches(rows, ConnectionSchema());
  };
  EXPECT_EQ(with("keep_alive", [](ConnectionFieldRow* row) { row->number = 13; }),
            std::vector<std::string>{"keep_alive: number 13 in the table, 12 in the schema"});
  EXPECT_EQ(with("keep_alive", [](ConnectionFieldRow* row) { row->json_name = "keepalive"; }),
            std::vector<std::string>{
                "keep_alive: JSON name keepalive in the table, keepAlive in the schema"});
  EXPECT_EQ(with("keep_alive", [](ConnectionFieldRow* row) { row->proto_type = "uint32"; }),
            std::vector<std::string>{"keep_alive: type uint32 in the table, int32 in the schema"});
  EXPECT_EQ(with("has_will", [](ConnectionFieldRow* row) { row->label = "singular"; }),
            std::vector<std::string>{"has_will: singular in the table, optional in the schema"});
  EXPECT_EQ(with("close_time", [](ConnectionFieldRow* row) { row->proto_type = "Timestamp"; }),
            std::vector<std::string>{
                "close_time: type Timestamp in the table, google.protobuf.Timestamp in the "
                "schema"});

  std::vector<ConnectionFieldRow> missing = Table();
  missing.pop_back();
  EXPECT_EQ(Mismatches(missing, ConnectionSchema()),
            std::vector<std::string>{"last_denied_time: in the schema, not in the table"});
  std::vector<ConnectionFieldRow> extra = Table();
  extra.push_back({"keepalive", "keepalive", 99, "singular", "int32"});
  EXPECT_EQ(Mismatches(extra, ConnectionSchema()),
            std::vector<std::string>{"keepalive: in the table, not in the schema"});
}

}  // namespace
}  // namespace mqc
