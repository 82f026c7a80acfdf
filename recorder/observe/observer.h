// The dispatcher callbacks: every op (forward FUNCTION scope), every autograd
// node (BACKWARD_FUNCTION scope) and the optimizer's step (USER_SCOPE) pass
// through here and become records of the active Session.
#pragma once

namespace acc::recorder::observer {

void install();
void uninstall();

}  // namespace acc::recorder::observer
