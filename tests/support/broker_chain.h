// SPDX-License-Identifier: BSD-3-Clause
// A chain of callbacks built as Mosquitto 2.0 builds one (src/plugin.c:
// mosquitto_callback_register callocs a node and appends it to a utlist DL list), for the tests
// of broker/callback_chain.h and of the decisions that read it.
#pragma once

#include <cstdlib>
#include <vector>

#include "broker/callback_chain.h"

namespace mqc {

class BrokerChain {
 public:
  BrokerChain() = default;
  BrokerChain(const BrokerChain&) = delete;
  BrokerChain& operator=(const BrokerChain&) = delete;
  ~BrokerChain() {
    for (BrokerCallbackNode* node : nodes_) std::free(node);
  }
  BrokerCallbackNode* Append(BrokerCallbackFn cb, void* userdata) {
    auto* node = static_cast<BrokerCallbackNode*>(std::calloc(1, sizeof(BrokerCallbackNode)));
    node->cb = cb;
    node->userdata = userdata;
    if (head_ != nullptr) {
      node->prev = head_->prev;
      head_->prev->next = node;
      head_->prev = node;
    } else {
      head_ = node;
      node->prev = node;
    }
    nodes_.push_back(node);
    return node;
  }
  BrokerCallbackNode* head() const { return head_; }

 private:
  BrokerCallbackNode* head_ = nullptr;
  std::vector<BrokerCallbackNode*> nodes_;
};

// Another plugin's callback (userdata: an OtherCallback): counts its calls and answers what it
// is told; `answer_for` decides by the topic of an ACL check where set.
struct OtherCallback {
  int calls = 0;
  int answer = 17;  // MOSQ_ERR_PLUGIN_DEFER
  int (*answer_for)(const void* event_data) = nullptr;
  static int Call(int /*event*/, void* event_data, void* userdata) {
    auto* other = static_cast<OtherCallback*>(userdata);
    ++other->calls;
    return other->answer_for != nullptr ? other->answer_for(event_data) : other->answer;
  }
};

}  // namespace mqc
