// SPDX-License-Identifier: BSD-3-Clause
// The Connect error envelope: each code's name and HTTP status as the Connect protocol's table of
// error codes gives them, written out here independently of the production table.
#include "companion/http/view_util.h"

#include <gtest/gtest.h>

#include <string_view>

#include "link/status.h"

namespace mqc {
namespace {

struct ExpectedCode {
  StatusCode code;
  std::string_view name;
  int http_status;
};

constexpr ExpectedCode kConnectProtocolCodes[] = {
    {StatusCode::kInvalidArgument, "invalid_argument", 400},
    {StatusCode::kDeadlineExceeded, "deadline_exceeded", 504},
    {StatusCode::kResourceExhausted, "resource_exhausted", 429},
    {StatusCode::kUnimplemented, "unimplemented", 501},
    {StatusCode::kInternal, "internal", 500},
    {StatusCode::kNotFound, "not_found", 404},
    {StatusCode::kUnauthenticated, "unauthenticated", 401},
    {StatusCode::kPermissionDenied, "permission_denied", 403},
    {StatusCode::kUnavailable, "unavailable", 503},
};

TEST(ConnectCodesTest, EveryErrorCodeHasConnectsNameAndHttpStatus) {
  for (const ExpectedCode& expected : kConnectProtocolCodes) {
    SCOPED_TRACE(std::string(expected.name));
    EXPECT_EQ(ConnectRpcCodeName(expected.code), expected.name);
    EXPECT_EQ(ConnectRpcHttpStatus(expected.code), expected.http_status);
  }
  EXPECT_EQ(ConnectRpcHttpStatus(StatusCode::kOk), 200);
}

TEST(ConnectCodesTest, TheErrorEnvelopeCarriesTheNameAndTheStatus) {
  const HttpResponse response =
      ConnectRpcErrorResponse(Status(StatusCode::kNotFound, "no \"such\" client"));
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.content_type, kJsonContentType);
  EXPECT_EQ(response.body, R"({"code":"not_found","message":"no \"such\" client"})");
  EXPECT_EQ(ConnectRpcErrorResponse(Status(StatusCode::kInternal, "x"), 413).status, 413);
}

}  // namespace
}  // namespace mqc
