// SPDX-License-Identifier: BSD-3-Clause
// A Connect-ES client of mqtt.connections.v1.ConnectionsService, built at run time from the
// descriptor set protoc wrote for proto/mqtt/connections/v1/connections.proto (no code
// generation step: connections_api.mjs), driven by integration/test_connect_clients.py.
//
//   node client.mjs DESCRIPTOR_SET BASE_URL CODEC(binary|json) METHOD(post|get) TOKEN VICTIM
//
// TOKEN is sent as a bearer token (an interceptor); VICTIM is the client id it disconnects.
// With MQC_DEADLINE_ONLY=1 it makes one call with a 1 ms deadline and reports only that: the test
// runs it while the companion is stopped, so that the deadline passes for certain.
//
// Prints one JSON object: what each call returned or the Connect error it raised, the content
// type of each answer (seen by an interceptor) and the HTTP method of each request (seen on its
// way to node:http). Exits 1 on anything
// unexpected (a thrown error that is not a ConnectError).
import http from "node:http";
import { syncBuiltinESMExports } from "node:module";

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

import { loadConnectionsApi } from "./connections_api.mjs";

const [descriptorPath, baseUrl, codec, method, token, victim] = process.argv.slice(2);
if (!descriptorPath || !baseUrl || !["binary", "json"].includes(codec) ||
    !["post", "get"].includes(method) || !token || !victim) {
  console.error("usage: node client.mjs DESCRIPTOR_SET BASE_URL binary|json post|get TOKEN VICTIM");
  process.exit(2);
}

const { service, enumNames } = loadConnectionsApi(descriptorPath);
const closeReasonName = enumNames("CloseReason");
const stateName = enumNames("MqttConnectionState");

// What went on the wire: the HTTP method and the Connect `encoding` query parameter (GET) of
// every request the transport sent (it calls node:http's request(url, options)).
const wire = [];
const originalRequest = http.request;
http.request = function (url, options, ...rest) {
  const target = new URL(url);
  wire.push({ method: options?.method ?? "GET", encoding: target.searchParams.get("encoding") });
  return originalRequest.call(this, url, options, ...rest);
};
syncBuiltinESMExports();

const seen = [];
const transportOptions = {
  baseUrl,
  httpVersion: "1.1",
  useBinaryFormat: codec === "binary",
  useHttpGet: method === "get",
};
const client = createClient(service, createConnectTransport({
  ...transportOptions,
  interceptors: [
    (next) => async (request) => {
      request.header.set("Authorization", `Bearer ${token}`);
      const response = await next(request);
      seen.push({ contentType: response.header.get("content-type") });
      return response;
    },
  ],
}));
// The same client without the token.
const anonymous = createClient(service, createConnectTransport(transportOptions));

// A Connect error as {code, message}; anything else is a failure of the test itself.
async function outcome(call) {
  try {
    return { ok: await call() };
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    return { code: Code[error.code], message: error.rawMessage };
  }
}

const report = {};

if (process.env.MQC_DEADLINE_ONLY === "1") {
  report.deadline = await outcome(async () => {
    await client.listConnections({}, { timeoutMs: 1 });
    return "answered";
  });
  console.log(JSON.stringify(report));
  process.exit(0);
}

// Every connection whose client id starts with "ces-", ten at a time, in client id order.
const pages = [];
let pageToken = "";
for (let i = 0; i < 20; i++) {
  const page = await client.listConnections({
    filter: 'client_id = "ces-*" AND state = MQTT_CONNECTION_STATE_OPEN',
    orderBy: "client_id",
    pageSize: 10,
    pageToken,
  });
  pages.push({
    clientIds: page.connections.map((c) => c.clientId),
    totalSize: page.totalSize.toString(),
    hasToken: page.nextPageToken !== "",
  });
  pageToken = page.nextPageToken;
  if (!pageToken) break;
}
report.pages = pages;

// One closed connection, every kind of field: enums, timestamps, durations, uint64, nested.
const closed = await client.listConnections({
  filter: 'client_id = "ces-closed" AND state = MQTT_CONNECTION_STATE_CLOSED',
});
report.closed = closed.connections.map((c) => ({
  clientId: c.clientId,
  uid: c.uid,
  state: stateName(c.state),
  closeReason: closeReasonName(c.closeReason),
  openSeconds: c.openTime ? c.openTime.seconds.toString() : null,
  closeAfterOpen: c.closeTime !== undefined &&
    (c.closeTime.seconds > c.openTime.seconds ||
     (c.closeTime.seconds === c.openTime.seconds && c.closeTime.nanos >= c.openTime.nanos)),
  protocolVersion: c.protocolVersion,
  keepAlive: c.keepAlive,
  sourceIp: c.source?.ipAddress,
  sourcePort: c.source?.port,
  listenerName: c.listenerName,
  subscriptions: c.subscriptions.map((s) => [s.filter, s.qos, s.pattern, s.channel]),
  publishCount: c.totalRequestStatistics?.publishCount.toString(),
  publishBytes: c.totalRequestStatistics?.publishBytes.toString(),
  hasIdleDuration: c.idleDuration !== undefined,
}));

report.badFilter = await outcome(() => client.listConnections({ filter: "client_id = x" }));
report.badToken = await outcome(() => client.listConnections({ pageToken: "garbage" }));
report.unauthenticated = await outcome(() => anonymous.listConnections({}));
report.disconnect = await outcome(async () => {
  const answer = await client.disconnectConnection({ connection: { case: "clientId", value: victim } });
  return { clientId: answer.clientId, uid: answer.uid, disconnected: answer.disconnected };
});
report.seen = seen;
report.wire = wire;
console.log(JSON.stringify(report));
