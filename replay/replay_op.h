// Runs one recorded op again on the CPU, on its own recorded inputs: in the
// recorded dtypes and with floating inputs promoted to float64. A forward
// record is called through the dispatcher by its schema (name + overload); a
// backward record is replayed as its forward op followed by autograd, fed
// the recorded incoming gradients.
#pragma once

#include "replay/protocol.h"

namespace acc::replay {

// Never throws: failures come back as Status::Failed with the reason.
Outcome replayOp(const Request& request);

}  // namespace acc::replay
