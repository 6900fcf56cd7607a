// SPDX-License-Identifier: BSD-3-Clause
// Connect-ES's server-streaming call WatchConnections, from the descriptor set as client.mjs
// does (connections_api.mjs), driven by integration/test_watch_connections.py.
//
//   node watch.mjs DESCRIPTOR_SET BASE_URL CODEC(binary|json) TOKEN FILTER RESUME_AFTER
//
// Prints one JSON line per message as it arrives ({sequence, kind, clientId, closeReason,
// subscription}), then {"end": "ok"} or {"end": CODE, "message": ...} for a Connect error.
// The content type of the answer is printed first ({"contentType": ...}). Exits 1 on anything
// that is not a ConnectError.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

import { loadConnectionsApi } from "./connections_api.mjs";

const [descriptorPath, baseUrl, codec, token, filter, resumeAfter] = process.argv.slice(2);
if (!descriptorPath || !baseUrl || !["binary", "json"].includes(codec) || !token) {
  console.error("usage: node watch.mjs DESCRIPTOR_SET BASE_URL binary|json TOKEN FILTER RESUME");
  process.exit(2);
}

const { service, enumNames } = loadConnectionsApi(descriptorPath);
const kindName = enumNames("ConnectionChangeKind");
const closeReasonName = enumNames("CloseReason");

const client = createClient(service, createConnectTransport({
  baseUrl,
  httpVersion: "1.1",
  useBinaryFormat: codec === "binary",
  interceptors: [
    (next) => async (request) => {
      request.header.set("Authorization", `Bearer ${token}`);
      const response = await next(request);
      console.log(JSON.stringify({ contentType: response.header.get("content-type") }));
      return response;
    },
  ],
}));

try {
  for await (const message of client.watchConnections({
    filter: filter ?? "",
    resumeAfter: BigInt(resumeAfter ?? "0"),
  })) {
    console.log(JSON.stringify({
      sequence: message.sequence.toString(),
      kind: kindName(message.kind),
      clientId: message.connection?.clientId ?? "",
      closeReason: message.connection ? closeReasonName(message.connection.closeReason) : "",
      subscription: message.subscription?.filter ?? "",
    }));
  }
  console.log(JSON.stringify({ end: "ok" }));
} catch (error) {
  if (!(error instanceof ConnectError)) throw error;
  console.log(JSON.stringify({ end: Code[error.code], message: error.rawMessage }));
}
