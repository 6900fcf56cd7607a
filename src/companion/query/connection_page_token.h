// SPDX-License-Identifier: BSD-3-Clause
// Page tokens of ListConnections: where the previous page ended in the ordering (the sort key
// values and seq of its last connection), bound to the filter and order_by it was made for.
// Keyset paging: the next page starts strictly after that position, so connections that come
// and go between requests neither shift nor repeat the ones that stay.
//
// Format, version 1: URL-safe base64 without padding (RFC 4648 §5) of
//   u8 version (1) | u64 fingerprint | per order key: u8 set (0 or 1), then if set its value |
//   u64 seq
// where a string value is a LEB128 length and its bytes, a number 8 bytes (two's complement),
// all integers big-endian, and the fingerprint is FNV-1a 64 over (u64 length of the filter,
// the filter, order_by), exactly as the request wrote them. Tokens are opaque to clients and not
// secret: a forged one can only choose where a page starts.
// Pure functions, safe on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "companion/query/connection_order.h"
#include "link/status.h"

namespace mqc {

std::uint64_t QueryFingerprint(std::string_view filter, std::string_view order_by);

std::string EncodePageToken(std::uint64_t fingerprint, const ConnectionOrder& order,
                            const OrderCursor& cursor);

// Reads a token made for `fingerprint` and `order`. On failure kInvalidArgument with
// "malformed page_token" or "page_token does not belong to this filter and order_by".
Status DecodePageToken(std::string_view token, std::uint64_t fingerprint,
                       const ConnectionOrder& order, OrderCursor* cursor);

}  // namespace mqc
