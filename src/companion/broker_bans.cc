// SPDX-License-Identifier: BSD-3-Clause
// See broker_bans.h.
#include "companion/broker_bans.h"

#include <iterator>
#include <utility>
#include <vector>

#include "link/clock.h"
#include "link/event_records.h"
#include "link/text_util.h"

namespace mqc {
namespace {

std::string Who(const Caller& caller) {
  return (caller.address.empty() ? std::string("an unknown address") : caller.address) + " (" +
         (caller.token_line.empty() ? std::string("no token") : caller.token_line) + ")";
}

std::string Until(const Ban& ban) {
  return ban.until_ns == 0 ? std::string("without end") : "until " + FormatRfc3339Seconds(ban.until_ns);
}

}  // namespace

BrokerBans::BrokerBans(BanStore* store, ConnectionRegistry* registry, CompanionLink* link,
                       const BrokerCounters* counters)
    : store_(store), registry_(registry), link_(link), counters_(counters) {}

BanAdmin BrokerBans::Admin() {
  BanAdmin admin;
  admin.list = [this] { return store_->List(NowNs()); };
  admin.add = [this](Ban ban, const Caller& caller) { return Add(std::move(ban), caller); };
  admin.remove = [this](const Ban& target, const Caller& caller) {
    return Remove(target, caller);
  };
  admin.refused_total = [this] {
    return counters_ != nullptr ? counters_->connects_banned.load(std::memory_order_relaxed)
                                : std::uint64_t{0};
  };
  admin.now_ns = [] { return NowNs(); };
  return admin;
}

// The answer says the ban is in force (docs/api.md): it waits until the broker thread has the
// list just sent (or a later one), which takes one TICK (about 100 ms on an idle 2.0 broker).
// A broker that takes longer gets the list all the same; the answer does not wait for it.
void BrokerBans::InForce() {
  constexpr std::int64_t kInForceTimeoutNs = 2'000'000'000;
  if (!link_->WaitForBans(link_->bans_sent(), kInForceTimeoutNs)) {
    link_->Log(LogLevel::kWarning, "the broker has not put the new ban list in force within 2 s");
  }
}

BanOutcome BrokerBans::Add(Ban ban, const Caller& caller) {
  BanOutcome outcome;
  if (ban.by.empty()) ban.by = caller.token_line.empty() ? caller.address : caller.token_line;
  const std::int64_t now = NowNs();
  outcome.status = store_->Add(ban, now);
  if (!outcome.status.ok()) return outcome;
  link_->Log(LogLevel::kNotice, "banned " + ban.Describe() + " " + Until(ban) +
                                    " at the request of " + Who(caller) +
                                    (ban.reason.empty() ? "" : ", reason '" +
                                                                   PrintableExcerpt(ban.reason) +
                                                                   "'"));
  std::vector<Ban> one{ban};
  outcome.kicked = KickMatching(BanMatcher(std::move(one)), caller.address, caller.token_line, now);
  outcome.ban = std::move(ban);
  InForce();  // the kicks queued behind the list are carried out at the same TICK
  return outcome;
}

BanOutcome BrokerBans::Remove(const Ban& target, const Caller& caller) {
  BanOutcome outcome;
  outcome.status = store_->Remove(target, NowNs(), &outcome.ban);
  if (!outcome.status.ok()) return outcome;
  InForce();
  link_->Log(LogLevel::kNotice,
             "unbanned " + outcome.ban.Describe() + " at the request of " + Who(caller));
  return outcome;
}

std::size_t BrokerBans::KickMatching(const BanMatcher& matcher, const std::string& caller,
                                     const std::string& token_line, std::int64_t now_ns,
                                     std::unordered_set<std::string>* matching) {
  if (matcher.empty()) return 0;
  std::vector<ConnectionPtr> found;
  // One client id ban: the registry's index. Anything else: its snapshot (pointers, no copy).
  if (matcher.bans().size() == 1 && matcher.bans()[0].kind == BanKind::kClientId) {
    found = registry_->FindByClientId(matcher.bans()[0].who);
  } else {
    const ConnectionList all = registry_->SharedSnapshot();
    found.assign(all->begin(), all->end());
  }
  std::size_t kicked = 0;
  for (const ConnectionPtr& c : found) {
    if (c->state != ConnectionState::kOpen || c->client_id.empty()) continue;
    if (matcher.Find(c->client_id, c->username.empty() ? nullptr : &c->username, c->ip_address,
                     now_ns) == nullptr) {
      continue;
    }
    if (matching != nullptr) matching->insert(c->uid);
    {
      // Already asked for (Sweep, a moment ago): counted, not asked again.
      std::lock_guard<std::mutex> lock(kicked_mutex_);
      if (!kicked_.insert(c->uid).second) {
        ++kicked;
        continue;
      }
    }
    KickCommand command;
    command.client_id = c->client_id;
    command.caller = caller;
    command.token_line = token_line;
    if (link_->RequestKick(command)) ++kicked;
  }
  return kicked;
}

void BrokerBans::BanFlapping(std::int64_t now_ns) {
  for (const std::string& client_id : registry_->TakeFlappingOffenders()) {
    Ban ban;
    if (!ParseBanTarget("clientid", client_id, &ban).ok()) continue;  // an id a ban cannot name
    ban.by = "flapping";
    ban.reason = "connected too often (plugin_opt_flapping_max_count)";
    ban.at_ns = now_ns;
    ban.until_ns = now_ns + flapping_ban_ns_;
    const Status added = store_->Add(ban, now_ns);
    if (!added.ok()) {
      link_->Log(LogLevel::kWarning,
                 "cannot ban flapping " + ban.Describe() + ": " + added.message());
      continue;
    }
    link_->Log(LogLevel::kNotice, "banned " + ban.Describe() + " " + Until(ban) +
                                      ": it connected more than plugin_opt_flapping_max_count "
                                      "times within plugin_opt_flapping_window_time");
    std::vector<Ban> one{ban};
    KickMatching(BanMatcher(std::move(one)), "flapping", "automatic ban", now_ns);
  }
}

void BrokerBans::Sweep(std::int64_t now_ns) {
  for (const Ban& ban : store_->Expire(now_ns)) {
    link_->Log(LogLevel::kNotice, "ban on " + ban.Describe() + " expired");
  }
  BanFlapping(now_ns);
  std::vector<Ban> bans = store_->List(now_ns);
  std::unordered_set<std::string> matching;
  if (!bans.empty()) {
    KickMatching(BanMatcher(std::move(bans)), "a ban", "sweep of open clients", now_ns,
                 &matching);
  }
  // A uid asked once is not asked again while its connection stays open and banned; closed
  // (or no longer banned) ones are forgotten.
  std::lock_guard<std::mutex> lock(kicked_mutex_);
  for (auto it = kicked_.begin(); it != kicked_.end();) {
    it = matching.count(*it) != 0 ? std::next(it) : kicked_.erase(it);
  }
}

}  // namespace mqc
