// SPDX-License-Identifier: BSD-3-Clause
// The web console (console/index.html): a live table of the open connections, the recently
// closed ones, one connection's every field, and three broker figures. Everything is asked of
// the companion's own APIs (docs/api.md): searching and sorting are ListConnections' filter and
// orderBy, done by the server (docs/query-language.md); the figures come from /metrics.
//
// The URL's fragment holds the view, so that a view can be linked (and driven by the tests):
//   #q=<search>&sort=<field>&desc=1&client=<client id>
// With bearer tokens on (a 401 with WWW-Authenticate: Bearer), the page asks for a token and
// keeps it in sessionStorage (this tab only). With a token it offers Disconnect on an open
// connection; a 403 answer means the token is not an admin token, and the button goes away.
// The ban list (ListBans) is shown below the tables; an admin token adds and removes bans
// (BanClient, UnbanClient), a read token gets the server's 403 message.
//
// The fleet (docs/fleet.md): the lists are asked with scope CONNECTION_SCOPE_FLEET unless the
// view says node (#scope=node; a broker without peers answers it as node scope). While the
// broker's answers name peers (fleetPeers), the page shows the fleet: a Broker column (each
// connection's nodeId, DUP for a client id open on two brokers), the brokers' health (each
// broker that answered with its count and answer time, each peer that failed with its message,
// the answer marked partial), the "whole fleet" toggle, Disconnect and Unban sent to the broker
// that holds the connection or ban (nodeId), and a ban for one broker or every broker.
//
// Live: the page follows WatchConnections (Connect's server stream, JSON codec, read here from
// the fetch body) and asks for the table again as soon as a change arrives, so a client shows up
// the moment it connects; a slow refresh keeps the figures and rates current. Without the stream
// (an older server, too many streams) it polls every 3 seconds. In a hidden tab it does neither:
// the stream is closed and the timer stopped until the tab is shown again.
'use strict';

const LIST_PATH = '/mqtt.connections.v1.ConnectionsService/ListConnections';
const DISCONNECT_PATH = '/mqtt.connections.v1.ConnectionsService/DisconnectConnection';
const SERVICE = '/mqtt.connections.v1.ConnectionsService/';
const OPEN = 'MQTT_CONNECTION_STATE_OPEN';
const CLOSED = 'MQTT_CONNECTION_STATE_CLOSED';
const WATCH_PATH = '/mqtt.connections.v1.ConnectionsService/WatchConnections';
const HISTORY_PATH = '/mqtt.connections.v1.ConnectionsService/GetClientHistory';
const ACTIVITY_PATH = '/mqtt.connections.v1.ConnectionsService/GetActivity';
const SVG = 'http://www.w3.org/2000/svg';
// One colour per series of a chart, in order (distinct for the colour-blind: blue, orange,
// red, green, purple, grey).
const SERIES_COLOURS = ['#0b63c5', '#e8710a', '#b42318', '#067647', '#7a5af8', '#667085'];
const EVENT_PREFIX = 'CLIENT_EVENT_KIND_';
const REFRESH_MS = 3000;        // polling, when there is no stream
const LIVE_REFRESH_MS = 15000;  // with the stream: figures and rates only
const CHANGE_DELAY_MS = 100;    // changes that come together are shown together
const WATCH_RETRY_MS = 5000;
const PAGE_SIZE = 1000;  // rows in the live table
const CLOSED_PAGE_SIZE = 50;
const RECENT_WINDOW_SECONDS = 60;  // recentRequestStatistics: the previous complete minute
const TOKEN_KEY = 'mosquitto-connections.token';
const NOT_ADMIN_KEY = 'mosquitto-connections.not-admin';
const PROTOCOLS = {3: '3.1', 4: '3.1.1', 5: '5.0'};

const view = {search: '', sortField: '', sortDesc: false, clientId: '', uid: '', flapping: false,
              scope: ''};
const FLEET_SCOPE = 'CONNECTION_SCOPE_FLEET';
// From the latest answers: how many peers the broker asks (0: none, or it predates the field),
// and its own node id (ListBans' nodeId).
let fleetPeers = 0;
let ownNode = null;
// A client id flaps when it connected this often in the last minute, or was taken over there
// (docs/api.md, "Flapping clients"): the badge in the table and the "flapping only" view.
const FLAPPING_RECONNECTS = 3;
const FLAPPING_FILTER =
    `(reconnects_last_minute >= ${FLAPPING_RECONNECTS} OR takeovers_last_minute > 0)`;
let timer = null;
let waitingForToken = false;
let watch = null;        // the AbortController of the running stream
let watchLive = false;   // the stream has sent its current state (SYNCED)
let watchRetry = null;
let changeTimer = null;
let confirmTimer = null;
// The client id whose Disconnect keeps the will back (the detail panel's checkbox), or null.
let preventWillFor = null;

const $ = (id) => document.getElementById(id);

// --- the URL fragment ----------------------------------------------------------------------

function readFragment() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  view.search = params.get('q') || '';
  view.sortField = params.get('sort') || '';
  view.sortDesc = params.get('desc') === '1';
  view.flapping = params.get('flapping') === '1';
  view.scope = params.get('scope') === 'node' ? 'node' : '';
  const clientId = params.get('client') || '';
  if (clientId !== view.clientId) {
    view.clientId = clientId;
    view.uid = '';
  }
}

function writeFragment() {
  const params = new URLSearchParams();
  if (view.search) params.set('q', view.search);
  if (view.sortField) params.set('sort', view.sortField);
  if (view.sortDesc) params.set('desc', '1');
  if (view.flapping) params.set('flapping', '1');
  if (view.scope) params.set('scope', view.scope);
  if (view.clientId) params.set('client', view.clientId);
  const text = params.toString();
  history.replaceState(null, '', text ? '#' + text : location.pathname + location.search);
}

// --- talking to the companion --------------------------------------------------------------

class TokenNeeded extends Error {}

async function request(path, message) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers['Authorization'] = 'Bearer ' + token;
  const init = {method: 'GET', headers, cache: 'no-store'};
  if (message !== undefined) {
    init.method = 'POST';
    headers['Content-Type'] = 'application/json';
    headers['Connect-Protocol-Version'] = '1';
    init.body = JSON.stringify(message);
  }
  const response = await fetch(path, init);
  if (response.status === 401 &&
      /^bearer/i.test(response.headers.get('WWW-Authenticate') || '')) {
    // Only when the refused token is still the one in use: a token entered while this request
    // was on its way is not the one refused.
    if (sessionStorage.getItem(TOKEN_KEY) === token) {
      askForToken(token ? 'The token was refused. Enter another one.'
                        : 'This broker\'s API asks for a bearer token.');
    }
    throw new TokenNeeded();
  }
  return response;
}

// The text of an error answer: a Connect error's message, the KubeMQ envelope's error_string.
async function errorText(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    if (body.message) return body.code ? body.code + ': ' + body.message : body.message;
    if (body.error_string) return body.error_string;
  } catch (e) { /* not JSON */ }
  return 'HTTP ' + response.status + (text ? ': ' + text : '');
}

function asksFleet() {
  return view.scope !== 'node';
}

// Whether the page shows the fleet: the broker has peers and the view is not node-only.
function showsFleet() {
  return fleetPeers > 0 && asksFleet();
}

async function listConnections(filter, orderBy, pageSize) {
  const message = {filter, orderBy, pageSize};
  if (asksFleet()) message.scope = FLEET_SCOPE;
  const started = performance.now();
  const response = await request(LIST_PATH, message);
  if (!response.ok) throw new Error(await errorText(response));
  const answer = await response.json();
  answer.elapsedMs = performance.now() - started;
  return answer;
}

// A string value of the filter language: JSON escapes, and '*' escaped unless it is a prefix.
function quoted(text, prefix) {
  const inner = JSON.stringify(text).slice(1, -1).replace(/\*/g, '\\*');
  return '"' + inner + (prefix ? '*' : '') + '"';
}

// What the search box means: a filter when it holds an operator or an IN list, else a client
// id prefix.
function searchFilter() {
  const text = view.search.trim();
  let filter = '';
  if (text) {
    filter = /[=<>]/.test(text) || /\bIN\s*\(/.test(text) ? text
                                                          : 'client_id = ' + quoted(text, true);
  }
  if (!view.flapping) return filter;
  return filter ? FLAPPING_FILTER + ' AND (' + filter + ')' : FLAPPING_FILTER;
}

function isFlapping(connection) {
  return (connection.reconnectsLastMinute || 0) >= FLAPPING_RECONNECTS ||
         (connection.takeoversLastMinute || 0) > 0;
}

// The search first, in parentheses: an OR in it stays inside (AND binds tighter than OR).
function withState(state, filter) {
  return (filter ? '(' + filter + ') AND ' : '') + 'state = ' + state;
}

// --- formatting ----------------------------------------------------------------------------

function seconds(duration) {  // "1.500s" -> 1.5
  const match = /^(-?\d+(?:\.\d+)?)s$/.exec(duration || '');
  return match ? Number(match[1]) : null;
}

function human(value) {  // seconds -> "4.2s", "3m12s", "2h5m", "1d3h"
  if (value === null || value === undefined) return '-';
  value = Math.max(value, 0);
  if (value < 10) return value.toFixed(1) + 's';
  const whole = Math.floor(value);
  const d = Math.floor(whole / 86400), h = Math.floor(whole % 86400 / 3600);
  const m = Math.floor(whole % 3600 / 60), s = whole % 60;
  if (d) return d + 'd' + h + 'h';
  if (h) return h + 'h' + m + 'm';
  if (m) return m + 'm' + s + 's';
  return s + 's';
}

function timeText(stamp) {  // RFC 3339 -> "2026-12-01 04:41:13Z"
  return stamp ? stamp.slice(0, 10) + ' ' + stamp.slice(11, 19) + 'Z' : '-';
}

function age(stamp) {
  const when = Date.parse(stamp || '');
  return Number.isNaN(when) ? '' : human((Date.now() - when) / 1000) + ' ago';
}

function address(connection) {
  const source = connection.source || {};
  if (!source.ipAddress) return '-';
  if (source.port === undefined) return source.ipAddress;
  return source.ipAddress.includes(':') ? '[' + source.ipAddress + ']:' + source.port
                                        : source.ipAddress + ':' + source.port;
}

function recentRate(connection, field) {
  const statistics = connection.recentRequestStatistics || {};
  return (Number(statistics[field] || 0) / RECENT_WINDOW_SECONDS).toFixed(1);
}

function shortEnum(value, prefix) {
  return value ? String(value).replace(prefix, '') : '-';
}

// --- the live table ------------------------------------------------------------------------

function cell(row, index, text, className) {
  let td = row.children[index];
  if (!td) {
    td = document.createElement('td');
    row.appendChild(td);
  }
  if (td.textContent !== text) td.textContent = text;
  td.className = className || '';
  return td;
}

function fillOpenRow(row, connection) {
  const id = cell(row, 0, connection.clientId || '');
  if (isFlapping(connection)) {
    const badge = element('span', 'flapping', 'badge flapping');
    badge.title = (connection.reconnectsLastMinute || 0) + ' connects and ' +
        (connection.takeoversLastMinute || 0) + ' takeovers in the last minute' +
        (connection.takeoverAddresses ? ', taking turns: ' + connection.takeoverAddresses.join(
            ' and ') : '');
    id.appendChild(document.createTextNode(' '));
    id.appendChild(badge);
  }
  cell(row, 1, connection.username || '-');
  cell(row, 2, address(connection));
  cell(row, 3, PROTOCOLS[connection.protocolVersion] || String(connection.protocolVersion || '-'));
  const since = cell(row, 4, timeText(connection.openTime));
  since.title = age(connection.openTime);
  cell(row, 5, human(seconds(connection.idleDuration)), 'number');
  cell(row, 6, String((connection.subscriptions || []).length), 'number');
  cell(row, 7, recentRate(connection, 'publishCount'), 'number');
  cell(row, 8, recentRate(connection, 'deliverCount'), 'number');
  const pending = cell(row, 9, pendingText(connection), 'number');
  pending.title = connection.messagesQueued === undefined ? ''
      : connection.messagesQueued + ' queued, ' + connection.messagesInFlight + ' in flight';
  fillNodeCell(row, 10, connection);
}

// The Broker column: the connection's node, and DUP when its client id is open on another
// broker too (duplicateClientId of a fleet answer).
function fillNodeCell(row, index, connection) {
  const node = cell(row, index, 'node ' + (connection.nodeId || 0), 'fleet-only');
  row.dataset.nodeId = String(connection.nodeId || 0);
  if (connection.duplicateClientId) {
    node.appendChild(document.createTextNode(' '));
    const badge = element('span', 'DUP', 'badge dup');
    badge.title = 'this client id is open on another broker of the fleet too';
    node.appendChild(badge);
  }
}

// The messages the broker holds for the client (messagesPending: queued + in flight); '-' when
// unknown (closed, not verified yet, or a broker whose layout is not known).
function pendingText(connection) {
  return connection.messagesPending === undefined ? '-' : String(connection.messagesPending);
}

function fillClosedRow(row, connection) {
  cell(row, 0, connection.clientId || '');
  cell(row, 1, connection.username || '-');
  cell(row, 2, address(connection));
  cell(row, 3, timeText(connection.openTime));
  cell(row, 4, timeText(connection.closeTime));
  cell(row, 5, shortEnum(connection.closeReason, 'CLOSE_REASON_'));
  fillNodeCell(row, 6, connection);
}

// Updates the rows in place, keyed by uid: the same <tr> stays for the same connection, so the
// selection, the focus and the scroll position survive a refresh.
function renderRows(table, connections, fill) {
  const body = table.tBodies[0];
  const scroller = table.parentElement;
  const scrollTop = scroller.scrollTop;
  const existing = new Map();
  for (const row of Array.from(body.rows)) existing.set(row.dataset.uid, row);
  let previous = null;
  for (const connection of connections) {
    let row = existing.get(connection.uid);
    if (row) {
      existing.delete(connection.uid);
    } else {
      row = document.createElement('tr');
      row.dataset.uid = connection.uid;
      row.addEventListener('click', () => select(row.dataset.uid, row.dataset.clientId));
    }
    row.dataset.clientId = connection.clientId || '';
    row.dataset.state = connection.state || '';
    fill(row, connection);
    row.classList.toggle('selected', connection.uid === view.uid);
    const expected = previous ? previous.nextSibling : body.firstChild;
    if (row !== expected) body.insertBefore(row, expected);
    previous = row;
  }
  for (const row of existing.values()) row.remove();
  scroller.scrollTop = scrollTop;
}

function renderSortHeaders() {
  for (const th of document.querySelectorAll('#connections th[data-field]')) {
    th.classList.toggle('sorted-asc', th.dataset.field === view.sortField && !view.sortDesc);
    th.classList.toggle('sorted-desc', th.dataset.field === view.sortField && view.sortDesc);
  }
}

function orderBy() {
  if (view.sortField) return view.sortField + (view.sortDesc ? ' desc' : ' asc');
  return view.flapping ? 'reconnects_last_minute desc, client_id asc' : 'client_id asc';
}

async function refreshLists() {
  const filter = searchFilter();
  const answers = await Promise.allSettled([
    listConnections(withState(OPEN, filter), orderBy(), PAGE_SIZE),
    listConnections(withState(CLOSED, filter), 'close_time desc', CLOSED_PAGE_SIZE),
  ]);
  const failed = answers.find((answer) => answer.status === 'rejected');
  if (failed) {  // the open list's error first: always the same message
    // The search alone, so that a refusal shows the message and position of the text typed;
    // the combined error only when the search alone passes.
    if (filter && !(failed.reason instanceof TokenNeeded)) await listConnections(filter, '', 1);
    throw failed.reason;
  }
  const [open, closed] = answers.map((answer) => answer.value);
  fleetPeers = Number(open.fleetPeers || 0);
  document.body.classList.toggle('has-peers', fleetPeers > 0);
  document.body.classList.toggle('fleet', showsFleet());
  $('fleet-view').checked = asksFleet();
  renderFleetHealth(open);
  const openRows = open.connections || [];
  renderRows($('connections'), openRows, fillOpenRow);
  renderRows($('closed'), closed.connections || [], fillClosedRow);
  const total = Number(open.totalSize || openRows.length);
  $('count').textContent = (total > openRows.length ? openRows.length + ' of ' + total + ' shown'
                                                    : total + (total === 1 ? ' connection'
                                                                           : ' connections')) +
      (showsFleet() && (open.peerErrors || []).length ? ' (partial)' : '');
}

// Each broker of the fleet answer (nodeAnswers): this one, then its peers, each with its part
// of the count and how long it took to answer (as this broker measured it; this broker's line
// also has the whole answer's time as the page saw it), and every peer that failed with its
// code and message. A partial answer says so: the failed peers' connections are neither listed
// nor counted.
function renderFleetHealth(answer) {
  const list = $('fleet-brokers');
  list.replaceChildren();
  if (!showsFleet()) {
    $('fleet-summary').textContent = fleetPeers > 0 ? 'this broker alone' : '';
    $('fleet-partial').hidden = true;
    return;
  }
  const failed = answer.peerErrors || [];
  for (const part of answer.nodeAnswers || []) {
    const node = part.nodeId || 0;
    const count = Number(part.totalSize || 0);
    const text = 'node ' + node + (part.peer ? ' (' + part.peer + ')' : ' (this broker)') + ': ' +
        count + (count === 1 ? ' connection' : ' connections') + ', answered in ' +
        formatMs(part.answerMs) + (part.peer ? '' : '; the fleet answer in ' +
                                   formatMs(answer.elapsedMs));
    const item = element('li', text, 'answered');
    item.dataset.node = String(node);
    list.appendChild(item);
  }
  for (const error of failed) {
    const item = element('li', error.peer + ': ' + error.code + ': ' + error.message, 'failed');
    item.dataset.peer = error.peer;
    list.appendChild(item);
  }
  $('fleet-summary').textContent = (fleetPeers - failed.length) + ' of ' + fleetPeers +
      ' peers answered';
  $('fleet-partial').hidden = failed.length === 0;
  $('fleet-partial').textContent = failed.length === 0 ? '' : 'Partial answer: ' +
      failed.length + (failed.length === 1 ? ' peer' : ' peers') +
      ' missing; their connections are neither listed nor counted.';
}

// A time in milliseconds as a person reads it: a tenth of a millisecond below 10 ms.
function formatMs(ms) {
  const value = Number(ms || 0);
  return (value < 10 ? value.toFixed(1) : String(Math.round(value))) + ' ms';
}

// --- the figures at the top (/metrics) -----------------------------------------------------

function parseMetrics(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (match) samples.push({name: match[1], labels: match[2] || '', value: Number(match[3])});
  }
  return samples;
}

function sum(samples, name, labelText) {
  return samples.filter((s) => s.name === name && (!labelText || s.labels.includes(labelText)))
      .reduce((total, s) => total + s.value, 0);
}

// name="value" pairs of a sample's label text, unescaped.
function labelsOf(labelText) {
  const labels = {};
  for (const match of labelText.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
    labels[match[1]] = match[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

// The top talkers of /metrics (plugin_opt_metrics_top_clients; absent when off), most first:
// the same N, in the same order (messages of the previous minute, then client id), as the
// metric and the CLI's top.
function topClients(samples) {
  const byClient = new Map();
  for (const s of samples) {
    if (s.name !== 'kubemq_mqtt_top_client_messages_per_second') continue;
    const labels = labelsOf(s.labels);
    const entry = byClient.get(labels.client_id) || {clientId: labels.client_id, publish: 0,
                                                     deliver: 0};
    entry[labels.direction === 'deliver' ? 'deliver' : 'publish'] = s.value;
    byClient.set(labels.client_id, entry);
  }
  return Array.from(byClient.values()).sort((a, b) =>
    (b.publish + b.deliver) - (a.publish + a.deliver) ||
    (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0));
}

function renderTopClients(top) {
  const section = $('top-clients');
  section.hidden = top.length === 0;
  const list = $('top-clients-list');
  list.replaceChildren(...top.map((client) => {
    const item = element('li');
    const link = element('a', client.clientId, 'client');
    link.href = '#';
    link.addEventListener('click', (event) => {
      event.preventDefault();
      select('', client.clientId);
    });
    item.appendChild(link);
    item.appendChild(element('span', ' ' + client.publish.toFixed(1) + ' pub/s, ' +
                                         client.deliver.toFixed(1) + ' deliver/s', 'note'));
    return item;
  }));
}

// --- the last hour (GetActivity) -------------------------------------------------------------

async function refreshActivity() {
  const response = await request(ACTIVITY_PATH, {});
  if (!response.ok) throw new Error('GetActivity: ' + await errorText(response));
  renderActivity(await response.json());
}

// A sample's count per second.
function perSecond(sample, value) {
  return (value || 0) / (sample.seconds || 1);
}

function renderActivity(answer) {
  const samples = answer.samples || [];
  const interval = answer.intervalSeconds || 10;
  $('activity').hidden = false;
  $('activity-note').textContent = samples.length
      ? samples.length + ' samples of ' + interval + ' s, the newest ' +
        new Date(samples[samples.length - 1].time).toLocaleTimeString()
      : 'the first sample comes within ' + interval + ' s';
  const reasons = new Set();
  for (const sample of samples) Object.keys(sample.disconnects || {}).forEach((r) => reasons.add(r));
  chart('chart-connections', samples, [
    ['open', (s) => s.openConnections || 0]]);
  chart('chart-churn', samples, [['connects', (s) => perSecond(s, s.connects)]].concat(
      [...reasons].sort().map((reason) => [
        'closed ' + reason.toLowerCase().replace(/_/g, ' '),
        (s) => perSecond(s, (s.disconnects || {})[reason])])));
  chart('chart-messages', samples, [
    ['received', (s) => perSecond(s, s.messagesReceived)],
    ['delivered', (s) => perSecond(s, s.messagesDelivered)]]);
  // The ACL's refusals only where the broker shows them (docs/api.md, "Denials"): elsewhere a
  // flat 0 would only look like a count.
  chart('chart-refusals', samples, [
    ['CONNECTs refused', (s) => perSecond(s, s.connectsRefused)],
    ['SUBSCRIBEs refused', (s) => perSecond(s, s.subscribesRefused)]].concat(
      answer.aclDenialsShown ? [['PUBLISHes refused', (s) => perSecond(s, s.publishesRefused)]]
                             : []));
  chart('chart-flapping', samples, [['flapping', (s) => s.flappingClients || 0]]);
}

// A small line chart of `series` ([label, value of a sample]) over the samples, into the figure
// `id` (its caption kept): one polyline per series, the top value written on the axis.
function chart(id, samples, series) {
  const figure = $(id);
  for (const old of figure.querySelectorAll('svg, .legend')) old.remove();
  const width = 280;
  const height = 80;
  const left = 34;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  const values = series.map(([, value]) => samples.map(value));
  const top = Math.max(1, ...values.flat());
  const line = (x1, y1, x2, y2) => {
    const axis = document.createElementNS(SVG, 'line');
    Object.entries({x1, y1, x2, y2, class: 'axis'}).forEach(([k, v]) => axis.setAttribute(k, v));
    svg.appendChild(axis);
  };
  line(left, 4, left, height - 4);
  line(left, height - 4, width, height - 4);
  const label = document.createElementNS(SVG, 'text');
  label.setAttribute('x', 2);
  label.setAttribute('y', 12);
  label.textContent = top >= 100 ? Math.round(top).toString() : String(+top.toPrecision(2));
  svg.appendChild(label);
  const slots = Math.max(samples.length - 1, 1);
  values.forEach((points, index) => {
    const polyline = document.createElementNS(SVG, 'polyline');
    polyline.setAttribute('class', 'series');
    polyline.setAttribute('stroke', SERIES_COLOURS[index % SERIES_COLOURS.length]);
    polyline.dataset.series = series[index][0];
    // One sample alone is drawn as a short flat line.
    const xy = points.length === 1 ? [[left, points[0]], [width, points[0]]]
        : points.map((v, i) => [left + (width - left) * i / slots, v]);
    polyline.setAttribute('points', xy.map(([x, v]) =>
        x.toFixed(1) + ',' + (height - 4 - (height - 8) * v / top).toFixed(1)).join(' '));
    svg.appendChild(polyline);
  });
  figure.appendChild(svg);
  const legend = element('div', '', 'legend');
  series.forEach(([name], index) => {
    const last = values[index].length ? values[index][values[index].length - 1] : 0;
    const entry = element('span', name + ' ' + (Number.isInteger(last) ? last : last.toFixed(1)));
    entry.style.setProperty('--swatch', SERIES_COLOURS[index % SERIES_COLOURS.length]);
    legend.appendChild(entry);
  });
  figure.appendChild(legend);
}

async function refreshFigures() {
  const response = await request('/metrics');
  if (!response.ok) throw new Error('/metrics: ' + await errorText(response));
  const samples = parseMetrics(await response.text());
  $('figure-connections').textContent = String(sum(samples, 'kubemq_mqtt_connections'));
  const operations = 'kubemq_mqtt_operations_total';
  $('figure-operations').textContent = String(sum(samples, operations));
  $('figure-operations-note').textContent =
      sum(samples, operations, 'status="success"') + ' success, ' +
      sum(samples, operations, 'status="error"') + ' error, ' +
      sum(samples, operations, 'status="dropped"') + ' dropped';
  const count = sum(samples, 'kubemq_mqtt_operation_duration_seconds_count');
  const total = sum(samples, 'kubemq_mqtt_operation_duration_seconds_sum');
  $('figure-latency').textContent = count ? (total / count * 1000).toFixed(1) + ' ms' : '-';
  $('figure-latency-note').textContent = count + ' timed RPC operations';
  renderTopClients(topClients(samples));
}

// --- the detail panel ----------------------------------------------------------------------

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function valueText(value) {
  if (value === undefined || value === null || value === '') return '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

// A titled list of fields; `fields` is [[label, value], ...].
function section(parent, title, fields) {
  parent.appendChild(element('h3', title));
  const list = element('dl');
  for (const [label, value] of fields) {
    list.appendChild(element('dt', label));
    list.appendChild(element('dd', valueText(value)));
  }
  parent.appendChild(list);
}

function table(parent, header, rows, id) {
  const node = element('table');
  if (id) node.id = id;
  const head = node.createTHead().insertRow();
  for (const name of header) head.appendChild(element('th', name));
  const body = node.createTBody();
  for (const cells of rows) {
    const row = body.insertRow();
    for (const text of cells) row.appendChild(element('td', valueText(text)));
  }
  parent.appendChild(node);
}

// Fields shown in their own sections; any other field the API adds is listed under "More".
const SHOWN = new Set(['nodeId', 'uid', 'state', 'openTime', 'closeTime', 'closeReason',
  'sessionExpiryTime', 'clientId', 'username', 'protocolVersion', 'cleanSession', 'keepAlive',
  'source', 'listenerName', 'tlsInfo', 'authenticationInfo', 'subscriptions', 'idleDuration',
  'totalRequestStatistics', 'recentRequestStatistics', 'networkInfo', 'messagesQueued',
  'messagesInFlight', 'messagesPending', 'incomingMessagesQueued', 'incomingMessagesInFlight',
  'incomingMessagesPending', 'messagesDropped', 'messagesDroppedQueueFull', 'bridgeRole',
  'bridgeName', 'deniedPublishCount', 'deniedSubscribeCount', 'lastDeniedTopic',
  'lastDeniedTime']);

// Which end of a bridge: "outgoing to-remote", "incoming", "no"; unknown when the API has none.
function bridgeText(connection) {
  if (!connection.bridgeRole) return undefined;
  const role = shortEnum(connection.bridgeRole, 'BRIDGE_ROLE_').toLowerCase();
  return connection.bridgeName ? `${role} ${connection.bridgeName}` : role;
}

function renderDetail(connection) {
  const panel = $('detail');
  panel.replaceChildren();
  if (!connection) {
    panel.appendChild(element('p', view.clientId ? 'No connection with client id ' +
        JSON.stringify(view.clientId) + '.' : 'Select a connection to see every field.', 'note'));
    return;
  }
  panel.dataset.uid = connection.uid;
  panel.dataset.clientId = connection.clientId || '';
  const title = element('h2', connection.clientId || '(empty client id)');
  title.appendChild(document.createTextNode(' '));
  const state = shortEnum(connection.state, 'MQTT_CONNECTION_STATE_');
  title.appendChild(element('span', state, 'badge ' + state.toLowerCase()));
  panel.appendChild(title);

  const canDisconnect = connection.state === OPEN && sessionStorage.getItem(TOKEN_KEY) &&
      !sessionStorage.getItem(NOT_ADMIN_KEY);
  if (canDisconnect) {
    const button = element('button', 'Disconnect');
    button.type = 'button';
    button.id = 'disconnect';
    button.addEventListener('click',
                            () => disconnect(button, connection.clientId, connection.nodeId));
    panel.appendChild(button);
    // The broker publishes the will of a client it disconnects (MQTT's rule for a close by the
    // server) unless this is ticked; kept across the panel's redraws, per client id.
    const label = element('label', ' keep its will back');
    const keep = document.createElement('input');
    keep.type = 'checkbox';
    keep.id = 'prevent-will';
    keep.checked = preventWillFor === connection.clientId;
    keep.addEventListener('change', () => {
      preventWillFor = keep.checked ? connection.clientId : null;
    });
    label.prepend(keep);
    panel.appendChild(label);
  }
  const message = element('p', '', 'note');
  message.id = 'action-message';
  panel.appendChild(message);

  const subscriptions = connection.subscriptions || [];
  panel.appendChild(element('h3', 'Subscriptions (' + subscriptions.length + ')'));
  // The KubeMQ pattern and channel of each filter; the mapping error column only when one has
  // an error (a filter that maps onto no channel).
  // The KubeMQ column: whether KubeMQ's MQTT side would accept the subscription (what strict
  // mode refuses), and why not.
  const withErrors = subscriptions.some((s) => s.mappingError);
  table(panel, ['filter', 'QoS', 'pattern', 'channel', 'shared group']
                   .concat(withErrors ? ['mapping error'] : []).concat(['KubeMQ']),
        subscriptions.map((s) => [s.filter, s.qos, s.pattern, s.channel, s.sharedGroup]
                                     .concat(withErrors ? [s.mappingError] : [])
                                     .concat([s.kubemqValid === false
                                                  ? 'refused: ' + (s.kubemqError || '')
                                                  : 'accepted'])),
        'subscriptions');

  panel.appendChild(element('h3', 'Traffic'));
  const total = connection.totalRequestStatistics || {};
  const recent = connection.recentRequestStatistics || {};
  table(panel, ['', 'since open', 'previous minute'], [
    ['publishes', total.publishCount || '0', recent.publishCount || '0'],
    ['publish bytes', total.publishBytes || '0', recent.publishBytes || '0'],
    ['deliveries', total.deliverCount || '0', recent.deliverCount || '0'],
    ['deliver bytes', total.deliverBytes || '0', recent.deliverBytes || '0'],
    ['requests', total.requestCount || '0', recent.requestCount || '0']], 'traffic');

  // What the broker holds for the connection; '-' where it does not tell (docs/api.md, "Queued
  // and in-flight messages": 2.0.11 and 2.0.12 count only the sum).
  const held = (value) => (value === undefined ? '-' : String(value));
  panel.appendChild(element('h3', 'Messages held by the broker'));
  table(panel, ['', 'queued', 'in flight', 'pending'], [
    ['to the client', held(connection.messagesQueued), held(connection.messagesInFlight),
     held(connection.messagesPending)],
    ['from the client', held(connection.incomingMessagesQueued),
     held(connection.incomingMessagesInFlight), held(connection.incomingMessagesPending)]],
        'messages');
  // What the broker threw away for it, by cause; '-' where the broker hides it (docs/api.md,
  // "Dropped messages": Mosquitto 2.1, an unverified client layout).
  panel.appendChild(element('h3', 'Messages dropped by the broker'));
  table(panel, ['', 'in all', 'queue full'], [
    ['to the client', held(connection.messagesDropped),
     held(connection.messagesDroppedQueueFull)]], 'drops');

  // What an ACL source refused this client (docs/api.md, "Denials"): "why does it receive
  // nothing?" in one look. Absent where the broker hides denials: said so, never a 0.
  panel.appendChild(element('h3', 'Denied by the ACL'));
  if (connection.deniedPublishCount === undefined) {
    const hidden = element('p', 'Not shown: this broker hides ACL denials from the plugin ' +
                                '(its start line says why).');
    hidden.id = 'denials';
    panel.appendChild(hidden);
  } else {
    table(panel, ['publishes', 'subscriptions', 'last refused topic', 'when'], [
      [connection.deniedPublishCount, connection.deniedSubscribeCount || '0',
       connection.lastDeniedTopic || '-', connection.lastDeniedTime || '-']], 'denials');
  }

  section(panel, 'Connection', [
    ['client id', connection.clientId], ['uid', connection.uid], ['node id', connection.nodeId],
    ['state', connection.state], ['username', connection.username],
    ['protocol', PROTOCOLS[connection.protocolVersion] || connection.protocolVersion],
    ['clean session', connection.cleanSession], ['keep alive', connection.keepAlive],
    ['address', address(connection)], ['listener', connection.listenerName],
    ['bridge', bridgeText(connection)],
    ['opened', connection.openTime], ['closed', connection.closeTime],
    ['close reason', connection.closeReason],
    ['session expiry', connection.sessionExpiryTime],
    ['idle', connection.idleDuration],
    ['will', connection.hasWill === undefined ? undefined : (connection.hasWill ? 'yes' : 'no')],
    // Counts of the client id (docs/api.md, "Flapping clients"); absent: 0.
    ['connects (minute / hour)', (connection.reconnectsLastMinute || 0) + ' / ' +
                                 (connection.reconnectsLastHour || 0)],
    ['takeovers (minute / hour)', (connection.takeoversLastMinute || 0) + ' / ' +
                                  (connection.takeoversLastHour || 0)],
    ['taking turns from', (connection.takeoverAddresses || []).join(', ') || undefined]]);

  const tls = connection.tlsInfo || {};
  section(panel, 'TLS', [['enabled', tls.enabled === true], ['version', tls.tlsVersion],
    ['cipher', tls.cipher], ['peer certificate subject', tls.peerCertificateSubject]]);
  const auth = connection.authenticationInfo || {};
  section(panel, 'Authentication', [
    ['mechanism', shortEnum(auth.mechanism, 'AUTHENTICATION_MECHANISM_')],
    ['state', shortEnum(auth.state, 'AUTHENTICATION_STATE_')],
    ['user principal', auth.userPrincipal], ['method', auth.method]]);

  if (connection.networkInfo) {
    const net = connection.networkInfo;
    section(panel, 'Network (kernel TCP_INFO)', [
      ['round-trip time', net.rttMicros === undefined ? undefined : net.rttMicros + ' µs'],
      ['rtt variance', net.rttVarianceMicros === undefined ? undefined
                                                           : net.rttVarianceMicros + ' µs'],
      ['retransmits', net.retransmits], ['send queue bytes', net.sendQueueBytes],
      ['receive queue bytes', net.receiveQueueBytes],
      ['since last receive', net.sinceLastReceive], ['since last send', net.sinceLastSend]]);
    const known = new Set(['rttMicros', 'rttVarianceMicros', 'retransmits', 'sendQueueBytes',
      'receiveQueueBytes', 'sinceLastReceive', 'sinceLastSend']);
    const more = Object.keys(net).filter((k) => !known.has(k)).map((k) => [k, net[k]]);
    if (more.length) section(panel, 'Network, more', more);
  }

  const others = Object.keys(connection).filter((k) => !SHOWN.has(k));
  if (others.length) section(panel, 'More', others.map((k) => [k, connection[k]]));
}

// The client id's kept events, oldest first; null when the broker keeps none of it (404) or
// the history is off (403).
async function clientHistory(clientId) {
  const response = await request(HISTORY_PATH, {clientId});
  if (response.status === 404 || response.status === 403) return null;
  if (!response.ok) throw new Error(await errorText(response));
  return (await response.json()).events || [];
}

// What an event says beyond its kind: the reason, the filters, the user, the address.
function eventDetails(event) {
  const parts = [];
  if (event.closeReason) parts.push(event.closeReason);
  if (event.count) {
    parts.push(event.count + (event.count > 1 ? ' filters' : ' filter') + ', last ' +
               JSON.stringify(event.filter || ''));
  }
  if (event.username) parts.push('user ' + JSON.stringify(event.username));
  if (event.protocolVersion) parts.push('MQTT ' + (PROTOCOLS[event.protocolVersion] || ''));
  if (event.ipAddress) {
    const host = event.ipAddress.includes(':') ? '[' + event.ipAddress + ']' : event.ipAddress;
    parts.push(host + (event.port ? ':' + event.port : ''));
  }
  return parts.join(', ');
}

// The timeline of the detail panel: one item per kept event, oldest first.
function renderHistory(panel, events) {
  panel.appendChild(element('h3', 'History (' + events.length + ')'));
  const list = document.createElement('ol');
  list.id = 'history';
  list.className = 'timeline';
  for (const event of events) {
    const item = document.createElement('li');
    item.dataset.kind = shortEnum(event.kind, EVENT_PREFIX);
    item.appendChild(element('time', event.time.replace('T', ' ').replace(/\.\d+Z$/, 'Z')));
    const kind = item.dataset.kind.toLowerCase();
    item.appendChild(element('span', kind.replace(/_/g, ' '), 'badge ' + kind));
    item.appendChild(element('span', eventDetails(event), 'event-details'));
    list.appendChild(item);
  }
  panel.appendChild(list);
}

async function refreshDetail() {
  if (!view.uid && !view.clientId) {
    renderDetail(null);
    return;
  }
  const filter = view.uid ? 'uid = ' + quoted(view.uid, false)
                          : 'client_id = ' + quoted(view.clientId, false);
  const answer = await listConnections(filter, 'open_time desc', 100);
  const connections = answer.connections || [];
  const connection = connections.find((c) => c.state === OPEN) || connections[0];
  if (connection && !view.uid) view.uid = connection.uid;
  for (const row of document.querySelectorAll('tbody tr')) {
    row.classList.toggle('selected', row.dataset.uid === view.uid);
  }
  // The history (a second request: a client id the closed list no longer holds still shows
  // what happened to it) before the panel is read, so that no click or answer can come between
  // the checks below and the redraw.
  const clientId = connection ? connection.clientId : view.clientId;
  const events = clientId ? await clientHistory(clientId) : null;
  const panel = $('detail');
  const keepMessage = panel.dataset.uid === (connection && connection.uid) &&
      $('action-message') ? $('action-message').textContent : '';
  // Do not redraw under a click in progress: an armed button, or a disconnect whose answer has
  // not come yet (a redraw then would bring the button back and lose the answer's message).
  const busy = $('disconnect') &&
      ($('disconnect').classList.contains('confirm') || $('disconnect').disabled);
  if (busy) return;
  renderDetail(connection);
  if (events && events.length) renderHistory($('detail'), events);
  if (keepMessage && $('action-message')) $('action-message').textContent = keepMessage;
}

function select(uid, clientId) {
  view.uid = uid;
  view.clientId = clientId;
  writeFragment();
  refreshDetail().catch(showError);
}

// Two clicks: the first arms the button for five seconds, the second disconnects.
async function disconnect(button, clientId, nodeId) {
  if (!button.classList.contains('confirm')) {
    button.classList.add('confirm');
    button.textContent = 'Click again to disconnect ' + clientId;
    clearTimeout(confirmTimer);
    confirmTimer = setTimeout(() => {
      button.classList.remove('confirm');
      button.textContent = 'Disconnect';
    }, 5000);
    return;
  }
  clearTimeout(confirmTimer);
  button.classList.remove('confirm');
  button.disabled = true;
  const message = $('action-message');
  try {
    const preventWill = preventWillFor === clientId;
    const target = preventWill ? {clientId, preventWill} : {clientId};
    // In the fleet: to the broker that holds it.
    if (showsFleet() && nodeId !== undefined) target.nodeId = nodeId;
    const response = await request(DISCONNECT_PATH, target);
    if (response.ok) {
      message.textContent =
          'Disconnected ' + clientId + (preventWill ? ', its will kept back.' : '.');
    } else if (response.status === 403) {
      sessionStorage.setItem(NOT_ADMIN_KEY, '1');
      button.remove();
      message.textContent = 'This token may not disconnect clients (it is not an admin token).';
    } else {
      message.textContent = 'Not disconnected: ' + await errorText(response);
    }
  } catch (error) {
    if (!(error instanceof TokenNeeded)) message.textContent = 'Not disconnected: ' + error.message;
  } finally {
    button.disabled = false;
    if (button.isConnected) button.textContent = 'Disconnect';
  }
  refresh();
}

// --- bans ----------------------------------------------------------------------------------

async function refreshBans() {
  const response = await request(SERVICE + 'ListBans', showsFleet() ? {scope: FLEET_SCOPE} : {});
  if (!response.ok) throw new Error(await errorText(response));
  const answer = await response.json();
  if (answer.nodeId !== undefined) ownNode = answer.nodeId;
  const body = $('bans').tBodies[0];
  body.replaceChildren();
  for (const ban of answer.bans || []) {
    const row = body.insertRow();
    cell(row, 0, ban.as);
    cell(row, 1, ban.who);
    cell(row, 2, ban.until ? timeText(ban.until) : 'no end');
    cell(row, 3, ban.by || '');
    cell(row, 4, ban.reason || '');
    const button = element('button', 'Unban');
    button.type = 'button';
    button.addEventListener('click', () => unban(button, ban.as, ban.who, ban.nodeId));
    row.insertCell().append(button);
    cell(row, 6, 'node ' + (ban.nodeId || 0), 'fleet-only');
  }
  // The ban form's choice of broker: this one, every one, or one node of the fleet.
  const where = $('ban-where');
  const chosen = where.value;
  const nodes = new Set((answer.bans || []).map((ban) => ban.nodeId || 0));
  for (const row of $('connections').tBodies[0].rows) nodes.add(Number(row.dataset.nodeId || 0));
  nodes.delete(ownNode);
  nodes.delete(0);
  for (const option of Array.from(where.options).slice(2)) option.remove();
  for (const node of Array.from(nodes).sort((a, b) => a - b)) {
    where.add(new Option('node ' + node, String(node)));
  }
  where.value = Array.from(where.options).some((o) => o.value === chosen) ? chosen : '';
}

// Where a ban change goes: the form's choice (or a ban's own node) while the fleet is shown.
function placeOf(message, where) {
  if (!showsFleet() || where === '' || where === undefined) return message;
  if (where === 'fleet') return Object.assign(message, {scope: FLEET_SCOPE});
  return Object.assign(message, {nodeId: Number(where)});
}

// What each broker did with a change made for the fleet: the failed ones named.
function brokersText(answer) {
  const failed = (answer.brokers || []).filter((b) => b.code);
  if (!answer.brokers) return '';
  return ' On ' + (answer.brokers.length - failed.length) + ' of ' + answer.brokers.length +
      ' brokers' + (failed.length ? '; not on ' + failed.map((b) => (b.peer || 'this broker') +
      ' (' + b.code + ': ' + b.message + ')').join(', ') : '') + '.';
}

async function banAction(method, message, done) {
  const status = $('ban-message');
  try {
    const response = await request(SERVICE + method, message);
    status.textContent = response.ok ? done(await response.json())
                                     : 'Not done: ' + await errorText(response);
  } catch (error) {
    if (!(error instanceof TokenNeeded)) status.textContent = 'Not done: ' + error.message;
  }
  refresh();
}

function ban(event) {
  event.preventDefault();
  const message = {as: $('ban-as').value, who: $('ban-who').value.trim()};
  if ($('ban-duration').value) message.durationS = $('ban-duration').value;
  if ($('ban-reason').value) message.reason = $('ban-reason').value;
  banAction('BanClient', placeOf(message, $('ban-where').value), (answer) => {
    $('ban-who').value = '';
    return 'Banned ' + answer.ban.as + ' ' + answer.ban.who + '; ' + answer.kicked +
           ' open client(s) disconnected.' + brokersText(answer);
  });
}

function unban(button, as, who, nodeId) {
  button.disabled = true;
  banAction('UnbanClient', placeOf({as, who}, nodeId === undefined ? '' : String(nodeId)),
            (answer) => 'Unbanned ' + as + ' ' + who + '.' + brokersText(answer));
}

// --- tokens --------------------------------------------------------------------------------

function askForToken(text) {
  sessionStorage.removeItem(TOKEN_KEY);
  waitingForToken = true;
  $('token-message').textContent = text;
  $('token-form').hidden = false;
  $('forget-token').hidden = true;
  $('token-input').focus();
}

function useToken(event) {
  event.preventDefault();
  const token = $('token-input').value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  sessionStorage.removeItem(NOT_ADMIN_KEY);
  $('token-input').value = '';
  $('token-form').hidden = true;
  waitingForToken = false;
  refresh();
  followChanges();
}

function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(NOT_ADMIN_KEY);
  refresh();
}

// --- the refresh loop ----------------------------------------------------------------------

function showError(error) {
  if (error instanceof TokenNeeded) return;
  $('error').textContent = error.message;
  $('error').hidden = false;
}

async function refresh() {
  clearTimeout(timer);
  $('forget-token').hidden = !sessionStorage.getItem(TOKEN_KEY);
  try {
    await refreshLists();
    $('error').hidden = true;
    await Promise.all([refreshDetail(), refreshFigures(), refreshBans(), refreshActivity()]);
    $('refreshed').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (error) {
    showError(error);
  }
  if (!waitingForToken && !document.hidden) {
    timer = setTimeout(refresh, watchLive ? LIVE_REFRESH_MS : REFRESH_MS);
  }
}

// --- the stream of changes ------------------------------------------------------------------

// Follows WatchConnections until it ends; each change after the current state refreshes the
// table (the table's own filter and order stay the server's).
async function followChanges() {
  clearTimeout(watchRetry);
  if (watch || document.hidden || waitingForToken) return;
  const controller = new AbortController();
  watch = controller;
  try {
    const headers = {'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1'};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers['Authorization'] = 'Bearer ' + token;
    const message = new TextEncoder().encode('{}');
    const body = new Uint8Array(5 + message.length);
    new DataView(body.buffer).setUint32(1, message.length);
    body.set(message, 5);
    const response = await fetch(WATCH_PATH, {method: 'POST', headers, body, cache: 'no-store',
                                              signal: controller.signal});
    if (!response.ok || !response.body) throw new Error('no stream');
    const reader = response.body.getReader();
    let pending = new Uint8Array(0);
    for (;;) {
      const {done, value} = await reader.read();
      // Stopped meanwhile (a hidden tab): a read already under way can still bring data,
      // whose changes must not start a refresh after stopFollowing.
      if (done || watch !== controller) break;
      const joined = new Uint8Array(pending.length + value.length);
      joined.set(pending);
      joined.set(value, pending.length);
      pending = joined;
      while (pending.length >= 5) {
        const size = new DataView(pending.buffer, pending.byteOffset).getUint32(1);
        if (pending.length < 5 + size) break;
        const flags = pending[0];
        const payload = JSON.parse(new TextDecoder().decode(pending.subarray(5, 5 + size)));
        pending = pending.slice(5 + size);
        if (flags & 2) throw new Error(payload.error ? payload.error.message : 'stream ended');
        onChange(payload.kind || '');
      }
    }
  } catch (error) {
    // Closed, refused or cut off: poll meanwhile, and try again later.
  } finally {
    if (watch === controller) watch = null;
    watchLive = false;
  }
  if (!document.hidden) watchRetry = setTimeout(followChanges, WATCH_RETRY_MS);
}

function onChange(kind) {
  if (kind.endsWith('_SYNCED')) {
    watchLive = true;  // and once more: what changed before the stream began
    $('live').hidden = false;
  } else if (!watchLive) {
    return;  // the current state: the table shows it
  }
  clearTimeout(changeTimer);
  changeTimer = setTimeout(refresh, CHANGE_DELAY_MS);
}

function stopFollowing() {
  clearTimeout(watchRetry);
  clearTimeout(changeTimer);
  clearTimeout(timer);
  if (watch) watch.abort();
  watch = null;
  watchLive = false;
  $('live').hidden = true;
}

function onVisibility() {
  if (document.hidden) {
    stopFollowing();
  } else {
    refresh();
    followChanges();
  }
}

function start() {
  readFragment();
  $('search').value = view.search;
  $('flapping-only').checked = view.flapping;
  $('flapping-only').addEventListener('change', () => {
    view.flapping = $('flapping-only').checked;
    writeFragment();
    refresh();
  });
  $('fleet-view').checked = asksFleet();
  $('fleet-view').addEventListener('change', () => {
    view.scope = $('fleet-view').checked ? '' : 'node';
    writeFragment();
    refresh();
  });
  renderSortHeaders();
  let typing = null;
  $('search').addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      view.search = $('search').value;
      writeFragment();
      refresh();
    }, 250);
  });
  for (const th of document.querySelectorAll('#connections th[data-field]')) {
    th.addEventListener('click', () => {
      view.sortDesc = view.sortField === th.dataset.field ? !view.sortDesc : false;
      view.sortField = th.dataset.field;
      renderSortHeaders();
      writeFragment();
      refresh();
    });
  }
  window.addEventListener('hashchange', () => {
    readFragment();
    $('search').value = view.search;
    renderSortHeaders();
    refresh();
  });
  $('token-form').addEventListener('submit', useToken);
  $('forget-token').addEventListener('click', forgetToken);
  $('ban-form').addEventListener('submit', ban);
  document.addEventListener('visibilitychange', onVisibility);
  refresh();
  followChanges();
}

start();
