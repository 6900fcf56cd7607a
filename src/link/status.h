// SPDX-License-Identifier: BSD-3-Clause
// Status: the outcome of an operation that can fail, as a code and a message (the pattern of
// absl::Status). One error type for the query engine and the HTTP views: callers branch on the
// code, never on the wording of the message. Codes are the Connect (and gRPC) codes the project
// answers with; docs/api.md maps each to its HTTP status. A value type, safe to copy between
// threads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace mqc {

enum class StatusCode : std::uint8_t {
  kOk,
  kInvalidArgument,
  kDeadlineExceeded,
  kResourceExhausted,
  kUnimplemented,
  kInternal,
  kNotFound,
  kUnauthenticated,
  kPermissionDenied,
  kUnavailable,
};

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace mqc
