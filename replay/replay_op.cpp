#include "replay/replay_op.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/SequenceNumber.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>

#include <cstdint>
#include <map>
#include <stdexcept>

#include "recorder/dtypes.h"
#include "replay/arguments.h"
#include "replay/autocast_casts.h"
#include "replay/reduced_precision.h"

namespace acc::replay {
namespace {

using format::Role;

// Thrown for what cannot be replayed by nature (not an error of the op).
struct NotReplayable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

format::Tensor toRecord(const at::Tensor& value, Role role, uint32_t position, uint32_t item) {
  format::Tensor t;
  t.role = role;
  t.position = position;
  t.item = item;
  at::Tensor host = value.detach().contiguous();
  t.dtype = recorder::dtypeOf(host.scalar_type());
  t.device = "cpu";
  t.shape.assign(host.sizes().begin(), host.sizes().end());
  t.has_data = true;
  t.data.assign(static_cast<const char*>(host.data_ptr()), host.nbytes());
  t.data_size = t.data.size();
  return t;
}

format::OpRecord emptyLike(const format::OpRecord& r) {
  format::OpRecord out;
  out.index = r.index;
  out.name = r.name;
  out.op = r.op;
  out.pass = r.pass;
  out.step = r.step;
  out.op_number = r.op_number;
  return out;
}

c10::OperatorHandle findOp(const format::OpRecord& r) {
  if (r.op.find("::") == std::string::npos) {
    // An msprobe dump read as a recording names Python APIs (Functional.gelu).
    throw NotReplayable(r.op + " is not a dispatcher op (msprobe dumps name Python APIs)");
  }
  if (!r.has_overload) {
    throw NotReplayable("its schema was not recorded (level 2 records it, from format version 3)");
  }
  auto op = c10::Dispatcher::singleton().findSchema({r.op, r.overload});
  if (!op) {
    throw NotReplayable("no op " + r.op + (r.overload.empty() ? "" : "." + r.overload) +
                        " in this torch (an extension's op, or another torch version)");
  }
  return *op;
}

void checkReplayable(const format::OpRecord& r, const c10::FunctionSchema* schema) {
  if (auto why = notReplayable(r, schema)) throw NotReplayable(*why);
}

// The values an op returned, flattened to (position, item, tensor).
void forEachResult(const torch::jit::Stack& stack, const std::function<void(uint32_t, uint32_t, const at::Tensor&)>& f) {
  for (uint32_t p = 0; p < stack.size(); ++p) {
    const c10::IValue& v = stack[p];
    if (v.isTensor()) {
      if (v.toTensor().defined()) f(p, 0, v.toTensor());
    } else if (v.isTensorList()) {
      uint32_t k = 0;
      for (const at::Tensor& t : v.toTensorVector()) {
        if (t.defined()) f(p, k, t);
        ++k;
      }
    }
  }
}

format::OpRecord runForward(const format::OpRecord& r, const c10::OperatorHandle& op, bool promote, int round_mantissa) {
  at::NoGradGuard no_grad;
  BuildOptions options;
  options.promote = promote;
  options.round_mantissa = round_mantissa;
  const AutocastCasts casts = autocastCasts(r, nullptr);
  options.autocast_to = casts.to;
  options.autocast_up = casts.up;
  Arguments args = buildArguments(r, op.schema(), options);
  op.callBoxed(&args.stack);
  format::OpRecord out = emptyLike(r);
  forEachResult(args.stack, [&](uint32_t p, uint32_t k, const at::Tensor& t) {
    out.tensors.push_back(toRecord(t, Role::Output, p, k));
  });
  return out;
}

// The backward node of `fwd` run again: the forward op with its floating
// inputs requiring grad, then autograd with the recorded incoming gradients.
// The node's outgoing gradients (grad_out position j) are those of the
// forward op's j-th floating tensor argument: checked by shape.
// The argument autograd refuses to differentiate ("... is not differentiable
// with respect to argument 'running_mean'"), or "".
std::string notDifferentiable(const std::string& message) {
  const std::string key = "not differentiable with respect to argument '";
  const size_t at = message.find(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size(), to = message.find('\'', from);
  return to == std::string::npos ? "" : message.substr(from, to - from);
}

format::OpRecord runBackward(const format::OpRecord& fwd, const format::OpRecord& bwd, const c10::OperatorHandle& op,
                             bool promote, int round_mantissa) {
  at::AutoGradMode grad_mode(true);
  BuildOptions options;
  options.promote = promote;
  options.grad = true;
  options.round_mantissa = round_mantissa;
  const AutocastCasts casts = autocastCasts(fwd, &bwd);
  options.autocast_to = casts.to;
  options.autocast_up = casts.up;
  Arguments args;
  // Floating arguments the op does not differentiate (batch norm's running
  // statistics) make it throw: run it again without their grad.
  for (;;) {
    args = buildArguments(fwd, op.schema(), options);
    if (args.floating.empty()) throw NotReplayable("the forward op has no floating-point input to differentiate");
    try {
      const uint64_t first_node = at::sequence_number::peek();
      op.callBoxed(&args.stack);
      // A composite op (cross_entropy_loss: log_softmax, then nll_loss)
      // makes several autograd nodes; the record is one of them, whose
      // gradients are not the op's even where their shapes agree.
      if (const uint64_t nodes = at::sequence_number::peek() - first_node; nodes > 1) {
        throw NotReplayable("one of " + std::to_string(nodes) + " autograd nodes of a composite op (" + bwd.grad_fn + ")");
      }
      break;
    } catch (const c10::Error& e) {
      const std::string name = notDifferentiable(e.what());
      if (name.empty() || options.no_grad.count(name) || options.no_grad.size() >= 8) throw;
      options.no_grad.insert(name);
    }
  }
  std::map<std::pair<uint32_t, uint32_t>, const format::Tensor*> grad_in;
  for (const format::Tensor& t : bwd.tensors) {
    if (t.role == Role::GradIn) grad_in[{t.position, t.item}] = &t;
  }
  std::vector<at::Tensor> outputs, grads;
  forEachResult(args.stack, [&](uint32_t p, uint32_t k, const at::Tensor& t) {
    auto g = grad_in.find({p, k});
    if (g == grad_in.end() || !t.requires_grad()) return;
    at::Tensor grad = tensorFromRecord(*g->second);
    // The backward products' factors are the incoming gradients too.
    if (round_mantissa && grad.scalar_type() == at::kFloat) roundMantissa(grad.data_ptr<float>(), grad.numel(), round_mantissa);
    grad = withRecordedLayout(grad.to(t.scalar_type()), *g->second);
    if (grad.sizes() != t.sizes()) throw NotReplayable("its incoming gradients do not match the forward op's outputs");
    outputs.push_back(t);
    grads.push_back(grad);
  });
  if (outputs.empty()) throw NotReplayable("no incoming gradient of a differentiable output was recorded");
  std::vector<at::Tensor> differentiated;  // the floating arguments that require grad
  for (const at::Tensor& t : args.floating) {
    if (t.requires_grad()) differentiated.push_back(t);
  }
  std::vector<at::Tensor> grads_of =
      torch::autograd::grad(outputs, differentiated, grads, /*retain_graph=*/false, /*create_graph=*/false,
                            /*allow_unused=*/true);
  std::vector<at::Tensor> result(args.floating.size());  // by position; undefined: no gradient
  for (size_t i = 0, k = 0; i < args.floating.size(); ++i) {
    if (args.floating[i].requires_grad()) result[i] = grads_of[k++];
  }
  format::OpRecord out = emptyLike(bwd);
  for (const format::Tensor& t : bwd.tensors) {
    if (t.role != Role::GradOut) continue;
    if (t.position >= result.size() || args.floating[t.position].sizes() != at::IntArrayRef(t.shape)) {
      throw NotReplayable("its gradients do not line up with the forward op's inputs (an op made of several "
                          "autograd nodes)");
    }
    at::Tensor g = result[t.position];
    if (!g.defined()) g = at::zeros_like(args.floating[t.position]);
    out.tensors.push_back(toRecord(g, Role::GradOut, t.position, t.item));
  }
  return out;
}

}  // namespace

Outcome replayOp(const Request& request) {
  Outcome o;
  try {
    if (request.records.empty()) throw std::runtime_error("an empty request");
    const format::OpRecord& fwd = request.records.front();
    const bool backward = request.records.size() > 1;
    if (fwd.pass != format::Pass::Forward) throw NotReplayable("its forward record was not recorded");
    const c10::OperatorHandle op = findOp(fwd);
    checkReplayable(fwd, &op.schema());
    auto run = [&](bool promote, int round_mantissa = 0) {
      return backward ? runBackward(fwd, request.records[1], op, promote, round_mantissa)
                      : runForward(fwd, op, promote, round_mantissa);
    };
    o.same_dtype = run(false);
    o.has_same_dtype = true;
    try {
      o.float64 = run(true);
      o.has_float64 = true;
      if (request.reduced_mantissa) {
        o.reduced = run(true, request.reduced_mantissa);
        o.has_reduced = true;
      }
    } catch (const std::exception& e) {
      o.float64_error = e.what();  // e.g. a kernel without a float64 version
    }
    o.status = Status::Replayed;
  } catch (const NotReplayable& e) {
    o = Outcome();
    o.status = Status::NotReplayable;
    o.reason = e.what();
  } catch (const std::exception& e) {
    o = Outcome();
    o.status = Status::Failed;
    std::string what = e.what();
    // torch's messages carry a C++ backtrace after the first line.
    o.reason = what.substr(0, what.find('\n'));
  }
  return o;
}

}  // namespace acc::replay
