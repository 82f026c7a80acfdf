// Hands a finished op record to the session's writer: encoded at once when
// its values are all on the host, in flight (in_flight.h) while device
// copies are still on their way. Shared by the observer and the NaN/Inf
// watch, which writes the records it kept once it has found its op.
#pragma once

#include <memory>

#include "recorder/observe/captured_op.h"
#include "recorder/session/session.h"

namespace acc::recorder {

void emitRecord(Session& s, std::unique_ptr<CapturedOp> record);

}  // namespace acc::recorder
