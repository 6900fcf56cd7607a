// SPDX-License-Identifier: BSD-3-Clause
// The resume token of a fleet watch: positions per node as the messages go out, and the token
// read back exactly, refused when it is not one.
#include "companion/http/watch_resume_token.h"

#include <gtest/gtest.h>

#include <string>

#include "link/text_util.h"

namespace mqc {
namespace {

TEST(WatchResumeTokenTest, PositionsFollowWhatWasSentPerNode) {
  FleetWatchPositions positions;
  // Node 1 sends its state and a change; node 3 is in the middle of its state.
  positions.Sent(1, ChangeKind::kReset, 100);
  positions.Sent(1, ChangeKind::kCurrent, 100);
  EXPECT_EQ(positions.ResumeAfter(1), 0u);  // a state not complete: fresh again
  positions.Sent(1, ChangeKind::kSynced, 100);
  EXPECT_EQ(positions.ResumeAfter(1), 100u);
  positions.Sent(1, ChangeKind::kOpened, 101);
  positions.Sent(3, ChangeKind::kSynced, 7000000000000000ull);
  positions.Sent(3, ChangeKind::kClosed, 7000000000000001ull);
  positions.Sent(3, ChangeKind::kReset, 7000000000000005ull);  // a gap on node 3
  positions.Sent(2, ChangeKind::kSynced, 5);

  FleetWatchPositions read;
  ASSERT_TRUE(FleetWatchPositions::FromToken(positions.Token(), &read).ok());
  EXPECT_EQ(read.ResumeAfter(1), 101u);
  EXPECT_EQ(read.ResumeAfter(2), 5u);
  EXPECT_EQ(read.ResumeAfter(3), 0u);  // its RESET was the last word: a fresh state
  EXPECT_EQ(read.ResumeAfter(4), 0u);  // unknown: a fresh state
  EXPECT_EQ(read.size(), 2u);
  EXPECT_EQ(read.Token(), positions.Token());
}

TEST(WatchResumeTokenTest, AnEmptyTokenIsEveryNodeFresh) {
  FleetWatchPositions positions;
  ASSERT_TRUE(FleetWatchPositions::FromToken("", &positions).ok());
  EXPECT_EQ(positions.size(), 0u);
  ASSERT_TRUE(FleetWatchPositions::FromToken(positions.Token(), &positions).ok());
  EXPECT_EQ(positions.size(), 0u);
}

TEST(WatchResumeTokenTest, WhatIsNotATokenIsRefused) {
  FleetWatchPositions good;
  good.Sent(1, ChangeKind::kSynced, 9);
  const std::string token = good.Token();
  std::string bytes;
  ASSERT_TRUE(DecodeBase64Url(token, &bytes, true));
  for (const std::string& bad : {
           std::string("not base64!"),
           EncodeBase64Url("F" + bytes.substr(1)),               // a page token's version
           EncodeBase64Url(bytes + "x"),                         // trailing bytes
           EncodeBase64Url(bytes.substr(0, bytes.size() - 1)),  // cut short
           EncodeBase64Url(std::string("W\x01\x01\x00", 4)),    // a zero position
           EncodeBase64Url(std::string("W\x02\x01\x05\x01\x06", 6)),  // node 1 twice
           EncodeBase64Url(std::string("W\x81\x40", 3)),              // 8193 nodes
       }) {
    FleetWatchPositions positions;
    positions.Sent(5, ChangeKind::kSynced, 1);
    const Status status = FleetWatchPositions::FromToken(bad, &positions);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("malformed resume_token"), std::string::npos);
    EXPECT_EQ(positions.size(), 0u);
  }
}

}  // namespace
}  // namespace mqc
