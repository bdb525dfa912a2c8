// What the Coordinator's implementation files share (coordinator.cc, ingest.cc,
// publication.cc, scheduler.cc, operator_calls.cc, read_models.cc, coordinator_log.cc): the
// topic (topic.h) and the refusal helpers. Internal to the core: nothing outside
// coordinator/core/ includes it.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "coordinator.h"
#include "topic.h"

namespace hotkey::coordinator {

using json = nlohmann::json;

// A refused call: `reason` is the machine-readable label, `message` the human one.
CallResult error_result(Status status, std::string reason, std::string message);
// kNotFound for an unpin, allow or policy_remove of a key (prefix) that holds no pin (deny,
// policy) in `topic`, or of a topic the coordinator does not know.
CallResult not_found(const std::string& what, const std::string& topic);

// One re-plan of a topic: what changes with it and what is committed with its list.
struct Coordinator::Replan {
  StoreBatch batch;       // records committed atomically with the list (operator writes...)
  std::string cause;      // the list-change log's cause: detection, surge, pin, pin_expired...
  OperatorChange change;  // replaces the topic's only once the batch is stored
  // The operator's entry, stamped with the version in force after the change.
  std::optional<AuditEntry> audit;
  // A report-triggered plan: publishes only when the listed keys change.
  bool triggered = false;
};

}  // namespace hotkey::coordinator
