// SPDX-License-Identifier: BSD-3-Clause
// What this broker build lets the plugin do, learnt once at start: which plugin API it speaks
// (2.0 or 2.1), its version, and which of the names the plugin would like to call it exports.
// Builds differ (docs/broker-versions.md): Mosquitto 2.0's own export list has 34 names, and
// only CMake builds up to 2.0.18 export more; 2.1's list has 81. The plugin links only names
// every supported broker exports and looks the others up at run time (plugin/broker_api.cc);
// this unit holds what follows from the answers, without a Mosquitto header, so that tests can
// check it.
//
// Threads: built on the broker thread at init, read-only afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "link/connection.h"

namespace mqc {

struct BrokerVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  bool known() const { return major != 0; }
  // "2.0.21", or "unknown".
  std::string Text() const;
  bool AtLeast(int at_major, int at_minor, int at_patch) const;
};

// The version a broker binary carries: Mosquitto keeps its VERSION ("2.0.21") as a string of
// its own (src/mosquitto.c prints it at start with "mosquitto version %s starting"). `binary` is
// the executable's bytes; the version is known only when exactly one distinct NUL-terminated
// string of the form 2.<minor>.<patch> is in it.
BrokerVersion FindBrokerVersion(std::string_view binary);

struct BrokerCapabilities {
  BrokerVersion version;
  // The 2.1 plugin API: CONNECT, SUBSCRIBE, UNSUBSCRIBE, MESSAGE_OUT and CLIENT_OFFLINE events,
  // a real DISCONNECT reason, MOSQ_ERR_PLUGIN_IGNORE, TICK only when asked for. Known by
  // mosquitto_client_port, which 2.1 alone exports.
  bool api_2_1 = false;
  // mosquitto_acl_check (2.0's seven arguments): the answer of the ACL sources after this
  // plugin. Exported by 2.0 CMake builds up to 2.0.18 only.
  bool acl_check = false;
  // mosquitto_property_read_string/_binary: MQTT 5 response topic and correlation data. Where
  // a 2.0 build hides them, the plugin reads 2.0's property list itself (plugin/broker_api.cc).
  bool property_readers = false;
  // mosquitto__get_state: why a 2.0 client disconnected.
  bool get_state = false;
  // mosquitto_client(id): the client object the broker holds under a client id, connected or
  // offline. 2.1 exports it from every build (src/linker.syms, v2.1.0 to master); 2.0 has no
  // such function. It is how the plugin sees the broker expire a session whose expiry it was
  // not told (SessionTable::EndGoneOffline): 2.1 sends no plugin event for that.
  bool client_lookup = false;

  // With per_listener_settings true, Mosquitto 2.0 sends TICK from 2.0.15 on (src/loop.c), and
  // 2.1 always. The plugin needs TICK to hear its companion.
  bool SendsTickWithPerListenerSettings() const {
    return api_2_1 || version.AtLeast(2, 0, 15);
  }
  // Whether deliveries are counted exactly. On 2.0 a delivery is an ACL READ check that every
  // ACL source allowed; when a source other than this plugin decides, mosquitto_acl_check tells
  // its answer, and without it the plugin knows only the acl_file's (it reads that file itself,
  // broker/acl_file.h). `unread_acl_source`: another ACL source the plugin cannot answer for (a
  // plugin such as dynamic security). 2.1 reports each delivery (MESSAGE_OUT).
  bool ExactDeliveries(bool unread_acl_source) const {
    return api_2_1 || !unread_acl_source || acl_check;
  }
  // One log line for the start: the broker, its API, and what the API shows differently on it
  // because a name is missing, or because ACL denials are hidden (`denials_hidden`:
  // DenialsShown in broker_core.h said no; on 2.0 that is the unread source above). Empty parts
  // are left out.
  std::string Describe(bool unread_acl_source, bool denials_hidden = false) const;
  // The start line's last clause: which causes of dropped messages this plugin API lets the
  // plugin see (docs/broker-versions.md, "Dropped messages").
  std::string DropsClause() const;
};

// Why a connection ended, from the `reason` of 2.1's DISCONNECT and CLIENT_OFFLINE events (a
// MOSQ_ERR_* code; src/context.c: context__disconnect passes do_disconnect's reason on).
CloseReason CloseReasonFromBrokerReason(int reason);

// Why a 2.0 connection ended, from the client's state at its DISCONNECT (enum
// mosquitto_client_state, lib/mosquitto_internal.h, values unchanged 2.0.0 to 2.1.2): the broker
// sets disconnecting (2) or disconnect_with_will (18) when it reads a DISCONNECT packet (and
// when a plugin kicks the client), duplicate (17) for a taken-over session. Any other state:
// no DISCONNECT (socket error, end of stream, keepalive). -1: the state is unknown.
CloseReason CloseReasonFromClientState(int state);

// Whether a DISCONNECT ends a CONNECT the broker refused, rather than a connection. `pending`:
// the client's CONNECT has not been settled by any other callback yet; `client_state`: its state
// (mosquitto__get_state), -1 where unknown. 2.1 settles every accepted CONNECT with its CONNECT
// event, so a pending client's DISCONNECT is a refusal. 2.0 up to 2.0.14 clears a refused
// client's id; from 2.0.15 it keeps it (src/handle_connect.c), and the client's state tells: a
// refused one never became active (mosq_cs_new, 0). Where neither tells (2.0.19 on hides the
// state), a pending client's DISCONNECT is taken for a refusal: wrongly only for a client that
// sends DISCONNECT right behind its CONNECT, before the broker's loop turns.
bool IsRefusal(bool api_2_1, bool pending, bool has_client_id, int client_state);

// The text of a MOSQ_ERR_* code for a log line, where the broker does not export
// mosquitto_strerror.
std::string BrokerErrorText(int code);

}  // namespace mqc
