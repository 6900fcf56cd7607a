// SPDX-License-Identifier: BSD-3-Clause
// The connection objects of the KubeMQ list (GET /api/mqtt/connections, docs/api.md), written
// byte for byte as JsonWriter writes them, for lists of any length: the whole list of 15,000
// connections is 5.4 MB, and JsonWriter's appends (a capacity check and a comma flag per key
// and value, a byte-by-byte escape scan) were 4,000 instructions a connection
// (docs/benchmarks.md, "The full KubeMQ list, written in place"). Here the constant text
// between the values is one copy each, the values' room is made once per connection, and the
// strings are scanned 8 bytes at a time (WriteJsonChars).
//
// Threads: a pure function, safe on any thread.
#pragma once

#include <string>
#include <vector>

#include "companion/connection.h"

namespace mqc {

// Appends the connections' objects, comma separated, to *out (the members of the list's
// "connections" array, without its brackets), in the given order.
void AppendKubeMqConnections(const std::vector<ConnectionPtr>& connections, std::string* out);

}  // namespace mqc
