// SPDX-License-Identifier: BSD-3-Clause
// The pure half of a fleet query (docs/fleet.md): the fleet page token, and the merge of each
// broker's page into one page in the requested order.
//
// Paging: every broker keeps its own position. The fleet token holds, per broker, the node
// page token that starts strictly after the last of its connections a fleet page showed (made
// here from that connection's order values and sequence, as the broker would make it). A
// broker absent from the token starts from its beginning; a broker that fails keeps its
// position in the next token; so brokers that come and go neither shift nor repeat the
// connections of the others.
//
// Token format, version 'F': URL-safe base64 without padding of
//   u8 'F' | u64 fingerprint (QueryFingerprint of filter and order_by) | LEB128 count |
//   per broker: LEB128 length + broker key, LEB128 length + node page token
// where the broker key is "self" for the broker that answers and a peer's canonical URL for
// a peer. A node token starts with version 1, so neither kind passes for the other.
// Pure functions, safe on any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "companion/query/connection_order.h"
#include "companion/query/connection_query.h"
#include "link/status.h"

namespace mqc {

inline constexpr char kSelfBroker[] = "self";

struct BrokerCursor {
  std::string broker;      // kSelfBroker or a peer's canonical URL
  std::string node_token;  // empty: from the start
};

std::string EncodeFleetToken(std::uint64_t fingerprint, const std::vector<BrokerCursor>& cursors);

// kInvalidArgument: "malformed page_token", "page_token does not belong to this filter and
// order_by", or a node-scope token given with CONNECTION_SCOPE_FLEET.
Status DecodeFleetToken(std::string_view token, std::uint64_t fingerprint,
                        std::vector<BrokerCursor>* cursors);

// The node token a broker was given in `cursors` (empty when absent).
std::string NodeTokenOf(const std::vector<BrokerCursor>& cursors, std::string_view broker);

// One broker's answer to its part of a fleet query.
struct BrokerAnswer {
  std::string broker;     // as in BrokerCursor
  bool answered = false;  // false: `failure` says why, `page` is empty
  ConnectionPage page;    // a node page of at most the fleet page's size
  PeerFailure failure;
  double answer_ms = 0;  // how long its rounds took, summed (NodeAnswer.answer_ms)
};

// Milliseconds from `start` to now: a BrokerAnswer's answer_ms.
inline double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// How many connections a fleet page of `page_size` asks each of `brokers` for in its first
// round: a fair share and a quarter, plus 16, at most the page. When the order spreads the page
// over the brokers (client ids, open times), each broker then produces and sends about a share
// instead of a whole page, which most of the merge would drop (docs/fleet.md, "Cost"); when it
// does not, MoreToAsk finds the brokers that ran short.
std::size_t FirstAskSize(std::size_t page_size, std::size_t brokers);

// For each answer, how many more connections (after its page's next_page_token) it must be asked
// for before MergeBrokerPages can fill a page of `page_size` in `order`: the merge cannot go on
// past a broker that ran out of answered connections but has more. All zero: the answers make
// the page. Each broker asked is asked for enough to reach the end of the page on its own, so
// a second call after the answers are appended (AppendAnswer) gives all zero.
std::vector<std::size_t> MoreToAsk(const ConnectionOrder& order, std::size_t page_size,
                                   const std::vector<BrokerAnswer>& answers);

// Adds a later round's answer of the same broker to `answer`: its connections after the
// earlier ones, its next_page_token; total_size stays the first round's. A failed round fails
// the broker (its earlier connections dropped: the page names it as missing).
void AppendAnswer(BrokerAnswer later, BrokerAnswer* answer);

// Merges the answers into `out`: the first `page_size` connections in `order` (ties: node id,
// then broker key), total_size the answered brokers' sum, node_answers the answered brokers
// (self's peer empty) and peer_errors the failures in the answers' order, and
// next_page_token, made for `fingerprint`, unless every answered broker showed its last match
// (a failed broker alone does not keep a walk going: its error says the walk is partial).
// `previous`: the cursors the request came with (kept for brokers that showed nothing or
// failed).
void MergeBrokerPages(const ConnectionOrder& order, std::uint64_t fingerprint,
                      std::size_t page_size, const std::vector<BrokerCursor>& previous,
                      std::vector<BrokerAnswer> answers, ConnectionPage* out);

// The distinct client ids of the page's open connections, in page order.
std::vector<std::string> OpenClientIds(const ConnectionPage& page);

// Sets duplicate_client_id on each open connection of `page` whose client id is open on two
// brokers or more, as `lookups` (one answer per broker: its open connections among the page's
// client ids) show them; brokers that did not answer are not counted.
void MarkDuplicateClientIds(const std::vector<BrokerAnswer>& lookups, ConnectionPage* page);

}  // namespace mqc
