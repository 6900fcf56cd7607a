// SPDX-License-Identifier: BSD-3-Clause
#include "companion/fleet/peer_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "loopback_server.h"

namespace mqc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

PeerUrl Loopback(int port) {
  StatusOr<PeerUrl> url = ParsePeerUrl("http://127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(url.ok());
  return *url;
}

PeerRequest Request(std::chrono::milliseconds budget) {
  PeerRequest request;
  request.path = "/x";
  request.body = "hello";
  request.headers = {{"Content-Type", "application/proto"}};
  request.deadline = Clock::now() + budget;
  return request;
}

TEST(ParseHttpResponseTest, ReadsStatusTypeAndBodyByLength) {
  const StatusOr<PeerResponse> response = ParseHttpResponse(
      "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\nContent-Length: 2\r\n\r\n{}xx");
  ASSERT_TRUE(response.ok()) << response.status().message();
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(response->content_type, "application/json");
  EXPECT_EQ(response->body, "{}");
}

TEST(ParseHttpResponseTest, RefusesWhatIsNotHttpOrIsCut) {
  EXPECT_THAT(ParseHttpResponse("SSH-2.0-OpenSSH_9.2\r\n").status().message(),
              HasSubstr("not HTTP/1.x"));
  EXPECT_THAT(ParseHttpResponse("HTTP/1.1 200 OK\r\nContent-Length: 5").status().message(),
              HasSubstr("ends inside its headers"));
  EXPECT_THAT(
      ParseHttpResponse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab").status().message(),
      HasSubstr("2 of 5 body bytes"));
  EXPECT_THAT(ParseHttpResponse("HTTP/1.1 2x0 OK\r\n\r\n").status().message(),
              HasSubstr("status line"));
  EXPECT_THAT(ParseHttpResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                  .status()
                  .message(),
              HasSubstr("chunked"));
}

TEST(PeerClientTest, PostsTheRequestAndReadsTheAnswer) {
  LoopbackServer server([](const std::string&) {
    return LoopbackServer::Response(200, "application/proto", "answer");
  });
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  const StatusOr<PeerResponse> response =
      (*client)->Post(Loopback(server.port()), Request(std::chrono::seconds(5)));
  ASSERT_TRUE(response.ok()) << response.status().message();
  EXPECT_EQ(response->body, "answer");
  const std::string sent = server.last_request();
  EXPECT_THAT(sent, HasSubstr("POST /x HTTP/1.1\r\n"));
  EXPECT_THAT(sent, HasSubstr("Host: 127.0.0.1:" + std::to_string(server.port())));
  EXPECT_THAT(sent, HasSubstr("Content-Length: 5\r\n"));
  EXPECT_THAT(sent, HasSubstr("\r\n\r\nhello"));
}

TEST(PeerClientTest, ASilentPeerEndsAtTheDeadline) {
  LoopbackServer server([](const std::string&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    return std::string();
  });
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  const auto start = Clock::now();
  const StatusOr<PeerResponse> response =
      (*client)->Post(Loopback(server.port()), Request(std::chrono::milliseconds(200)));
  const auto took = Clock::now() - start;
  EXPECT_EQ(response.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(response.status().message(), HasSubstr("no answer in time"));
  EXPECT_LT(took, std::chrono::milliseconds(700));
}

TEST(PeerClientTest, AnAnswerOverTheCapIsRefused) {
  LoopbackServer server([](const std::string&) {
    return LoopbackServer::Response(200, "application/proto", std::string(100000, 'x'));
  });
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  PeerRequest request = Request(std::chrono::seconds(5));
  request.max_response_bytes = 1000;
  const StatusOr<PeerResponse> response = (*client)->Post(Loopback(server.port()), request);
  EXPECT_EQ(response.status().code(), StatusCode::kInternal);
  EXPECT_THAT(response.status().message(), HasSubstr("larger than 1000 bytes"));
}

TEST(PeerClientTest, APortWithoutListenerIsUnavailable) {
  int port = 0;
  {
    LoopbackServer server([](const std::string&) { return std::string(); });
    port = server.port();
  }
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  const StatusOr<PeerResponse> response =
      (*client)->Post(Loopback(port), Request(std::chrono::seconds(2)));
  EXPECT_EQ(response.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(response.status().message(), HasSubstr("cannot connect"));
}

TEST(PeerClientTest, AnUnreadableCaFileIsRefusedNamingTheOption) {
  const auto client = PeerClient::Create("/nonexistent/ca.pem", true);
  EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("plugin_opt_fleet_ca_file /nonexistent/ca.pem"));
}

// A file that is there but holds no PEM certificate is refused as one that is not there.
TEST(PeerClientTest, ACaFileWithoutACertificateIsRefusedNamingTheOption) {
  const std::string path = ::testing::TempDir() + "peer-ca-" + std::to_string(getpid()) + ".pem";
  {
    std::ofstream file(path);
    file << "not a certificate\n";
  }
  const auto client = PeerClient::Create(path, true);
  std::remove(path.c_str());
  EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), HasSubstr("plugin_opt_fleet_ca_file " + path));
  EXPECT_THAT(client.status().message(), HasSubstr("cannot be read as PEM CA certificates"));
}

TEST(PeerClientTest, AnHttpsPeerThatSpeaksPlainHttpFailsTheHandshake) {
  LoopbackServer server(
      [](const std::string&) { return LoopbackServer::Response(200, "application/proto", "x"); });
  const auto client = PeerClient::Create("", true);
  ASSERT_TRUE(client.ok()) << client.status().message();
  StatusOr<PeerUrl> url = ParsePeerUrl("https://127.0.0.1:" + std::to_string(server.port()));
  ASSERT_TRUE(url.ok());
  const StatusOr<PeerResponse> response = (*client)->Post(*url, Request(std::chrono::seconds(3)));
  EXPECT_FALSE(response.ok());
  EXPECT_THAT(response.status().message(), HasSubstr("TLS handshake"));
}


LoopbackServer::Options KeptOpen(int port = 0) {
  LoopbackServer::Options options;
  options.keep_alive = true;
  options.port = port;
  return options;
}

PeerPoolOptions Pool(std::size_t max_idle, std::chrono::milliseconds idle_timeout) {
  PeerPoolOptions options;
  options.max_idle_per_peer = max_idle;
  options.idle_timeout = idle_timeout;
  return options;
}

PeerRequest KeptRequest() {
  PeerRequest request = Request(std::chrono::seconds(5));
  request.keep_alive = true;
  return request;
}

TEST(PeerClientKeepAliveTest, ReadsGoOnOneKeptConnection) {
  LoopbackServer server(
      [](const std::string&) { return LoopbackServer::Response(200, "application/proto", "a"); },
      KeptOpen());
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  for (int i = 0; i < 3; ++i) {
    const StatusOr<PeerResponse> response =
        (*client)->Post(Loopback(server.port()), KeptRequest());
    ASSERT_TRUE(response.ok()) << response.status().message();
    EXPECT_EQ(response->body, "a");
  }
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(server.connections(), 1);
  EXPECT_THAT(server.last_request(), Not(HasSubstr("Connection: close")));
  EXPECT_EQ((*client)->IdleConnections(), 1u);
}

TEST(PeerClientKeepAliveTest, AWriteIsNeverKept) {
  LoopbackServer server(
      [](const std::string&) { return LoopbackServer::Response(200, "application/proto", "a"); },
      KeptOpen());
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Post(Loopback(server.port()), Request(std::chrono::seconds(5))).ok());
  EXPECT_THAT(server.last_request(), HasSubstr("Connection: close\r\n"));
  EXPECT_EQ((*client)->IdleConnections(), 0u);
}

TEST(PeerClientKeepAliveTest, AnAnswerThatSaysCloseIsNotKept) {
  LoopbackServer server(
      [](const std::string&) {
        return std::string("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na");
      },
      KeptOpen());
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Post(Loopback(server.port()), KeptRequest()).ok());
  EXPECT_EQ((*client)->IdleConnections(), 0u);
}

TEST(PeerClientKeepAliveTest, AChunkedAnswerOnAKeptConnectionIsRefusedAtOnce) {
  // The server keeps the connection open after it: the client must not wait for the end.
  LoopbackServer server(
      [](const std::string&) {
        return std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n");
      },
      KeptOpen());
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  const auto start = Clock::now();
  const StatusOr<PeerResponse> response = (*client)->Post(Loopback(server.port()), KeptRequest());
  EXPECT_THAT(response.status().message(), HasSubstr("chunked"));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ((*client)->IdleConnections(), 0u);
}

TEST(PeerClientKeepAliveTest, AnIdleConnectionIsClosedAfterTheIdleTimeout) {
  LoopbackServer server(
      [](const std::string&) { return LoopbackServer::Response(200, "application/proto", "a"); },
      KeptOpen());
  const auto client = PeerClient::Create(
      "", false, Pool(4, std::chrono::milliseconds(100)));
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Post(Loopback(server.port()), KeptRequest()).ok());
  EXPECT_EQ((*client)->IdleConnections(), 1u);
  for (int i = 0; i < 100 && server.closed_by_client() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(server.closed_by_client(), 1);
  EXPECT_EQ((*client)->IdleConnections(), 0u);
}

TEST(PeerPoolTest, IdleConnectionsPerPeerAreBounded) {
  // Requests at once need a connection each; only max_idle_per_peer of them are kept after.
  PeerPool pool(Pool(2, std::chrono::seconds(5)));
  for (int i = 0; i < 5; ++i) {
    PeerLink link;
    link.fd = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    pool.Put("http://127.0.0.1:1", std::move(link));
  }
  PeerLink other;
  other.fd = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  pool.Put("http://127.0.0.1:2", std::move(other));
  EXPECT_EQ(pool.Idle(), 3u);
}

TEST(PeerClientKeepAliveTest, APeerRestartedBetweenTwoRequestsIsAskedOnANewConnection) {
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  int port = 0;
  {
    LoopbackServer first(
        [](const std::string&) { return LoopbackServer::Response(200, "application/proto", "1"); },
        KeptOpen());
    port = first.port();
    ASSERT_TRUE((*client)->Post(Loopback(port), KeptRequest()).ok());
    ASSERT_EQ((*client)->IdleConnections(), 1u);
  }  // stopped: its connections closed, the kept one among them
  LoopbackServer second(
      [](const std::string&) { return LoopbackServer::Response(200, "application/proto", "2"); },
      KeptOpen(port));
  const StatusOr<PeerResponse> response = (*client)->Post(Loopback(port), KeptRequest());
  ASSERT_TRUE(response.ok()) << response.status().message();
  EXPECT_EQ(response->body, "2");
  EXPECT_EQ(second.connections(), 1);
}

TEST(PeerClientKeepAliveTest, AKeptConnectionClosedUnderTheRequestIsRetriedOnceOnANewOne) {
  // The peer reads the second request on the kept connection and closes it unanswered (its
  // idle timeout struck as the request came); the client sends it again on a new connection.
  std::atomic<int> calls{0};
  LoopbackServer server(
      [&](const std::string&) {
        return ++calls == 2 ? std::string()
                            : LoopbackServer::Response(200, "application/proto", "ok");
      },
      KeptOpen());
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Post(Loopback(server.port()), KeptRequest()).ok());
  const StatusOr<PeerResponse> response = (*client)->Post(Loopback(server.port()), KeptRequest());
  ASSERT_TRUE(response.ok()) << response.status().message();
  EXPECT_EQ(response->body, "ok");
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(server.connections(), 2);
}

TEST(PeerClientKeepAliveTest, AWriteOnAConnectionClosedUnderItIsNotSentAgain) {
  std::atomic<int> calls{0};
  LoopbackServer server([&](const std::string&) { return ++calls, std::string(); },
                        KeptOpen());
  const auto client = PeerClient::Create("", false);
  ASSERT_TRUE(client.ok());
  const StatusOr<PeerResponse> response =
      (*client)->Post(Loopback(server.port()), Request(std::chrono::seconds(5)));
  EXPECT_EQ(response.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(server.requests(), 1);
}

}  // namespace
}  // namespace mqc
