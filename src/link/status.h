// SPDX-License-Identifier: BSD-3-Clause
// Status: the outcome of an operation that can fail, as a code and a message (the pattern of
// absl::Status). One error type for the query engine and the HTTP views: callers branch on the
// code, never on the wording of the message. Codes are the Connect (and gRPC) codes the project
// answers with; docs/api.md maps each to its HTTP status. A value type, safe to copy between
// threads.
#pragma once

#include <cstdint>
#include <optional>
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

// The refusal of a caller's input: kInvalidArgument with a message naming what was wrong.
inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// StatusOr<T>: a value, or the Status that says why there is none (absl::StatusOr's pattern),
// for an operation that can fail and gives something back. Both constructors are implicit, so
// a function returns either `value` or `Status(code, message)`. An OK Status given without a
// value is a caller's mistake and becomes kInternal. value() on a failure is undefined, as
// dereferencing an empty std::optional is: check ok() first.
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  StatusOr(Status status)                          // NOLINT(google-explicit-constructor)
      : status_(status.ok() ? Status(StatusCode::kInternal, "an OK status without a value")
                            : std::move(status)) {}

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }  // OK when there is a value

  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return *std::move(value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace mqc
