#include "recorder/python/python_hooks.h"

#include <cstdio>
#include <initializer_list>
#include <string>

#include "recorder/python/module_paths.h"
#include "recorder/python/python_api.h"
#include "recorder/session/session.h"

namespace acc::recorder {
namespace {

// The hooks, run once with _acc_intern, _acc_enter and _acc_grad_next in
// their globals. Python keeps each thread's module stack; the recorder only
// needs the top. Paths come from the outermost module's named_modules(),
// learnt the first time it is called: a module reached through two
// attributes (shared) is named by the first, as named_modules() does; one
// called outside that tree gets its caller's path. torch.compile traces
// module calls: the hooks do nothing while it does, so they cause no graph
// break. _acc_grads hands each parameter's gradient to the recorder through
// an aten::alias op, which the recorder sees with the tensor unpacked.
constexpr const char* kHooks = R"PY(
def _acc_hooks():
    import threading, weakref
    import torch
    from torch.nn.modules import module as mm
    compiling = getattr(getattr(torch, 'compiler', None), 'is_compiling', None)
    if compiling is None:
        compiling = getattr(getattr(torch, '_dynamo', None), 'is_compiling', None)
    if compiling is None:
        compiling = lambda: False
    trees = weakref.WeakKeyDictionary()  # outermost module -> {id(module): path id}
    local = threading.local()
    intern, enter, grad_next = _acc_intern, _acc_enter, _acc_grad_next
    # acc finishes the recording in Python's atexit, while the device
    # backends the program imported still have their kernels, and before an
    # unhandled KeyboardInterrupt ends Python by SIGINT without C's atexit
    # (session.h, pythonExiting).
    import atexit
    atexit.register(_acc_python_exit)
    alias = torch.ops.aten.alias

    def wrapper(mod):
        # torch.compile's OptimizedModule calls the model it wraps: paths
        # are the model's own (not "_orig_mod.layers.0"), and its call
        # fires no hook of acc's twice.
        return type(mod).__name__ == 'OptimizedModule' and hasattr(mod, '_orig_mod')

    def pre(mod, args):
        if compiling() or wrapper(mod):
            return
        st = getattr(local, 'st', None)
        if st is None:
            st = local.st = []
        root = st[0][0] if st else mod
        tree = trees.get(root)
        if tree is None:
            tree = {id(m): intern(name) for name, m in root.named_modules()}
            trees[root] = tree
        i = tree.get(id(mod))
        if i is None:
            i = st[-1][1] if st else 0
        st.append((mod, i))
        enter(i)

    def post(mod, args, out):
        if compiling() or wrapper(mod):
            return
        st = getattr(local, 'st', None)
        if not st:
            return
        # Down to this module's entry: entries above it are modules whose
        # forward raised (torch before 2.1 calls no hook then).
        for k in range(len(st) - 1, -1, -1):
            if st[k][0] is mod:
                del st[k:]
                break
        enter(st[-1][1] if st else 0)

    def grads():
        seen = set()
        with torch.no_grad():
            for root in list(trees.keys()):
                for name, p in root.named_parameters():
                    g = p.grad
                    if g is None or id(p) in seen:
                        continue
                    seen.add(id(p))
                    grad_next(name)
                    try:
                        alias(g)
                    except Exception:  # a layout alias has no kernel for: that gradient is not recorded
                        pass
        grad_next('')

    mine = {mm.register_module_forward_pre_hook(pre).id}
    try:
        mine.add(mm.register_module_forward_hook(post, always_call=True).id)  # torch 2.1+: also when forward raises
    except TypeError:
        mine.add(mm.register_module_forward_hook(post).id)

    # torch.compile(module) warns on every call when any global module hook
    # is set (torch 2.2+, the only caller of _has_any_global_hook): acc's
    # must not change the program's output, the program's own still warn.
    if hasattr(mm, '_has_any_global_hook'):
        tables = [t for t in ('_global_backward_pre_hooks', '_global_backward_hooks',
                              '_global_forward_pre_hooks', '_global_forward_hooks',
                              '_global_forward_hooks_always_called', '_global_forward_hooks_with_kwargs')
                  if isinstance(getattr(mm, t, None), dict)]

        def _has_any_global_hook():
            return any(k not in mine for t in tables for k in getattr(mm, t))

        mm._has_any_global_hook = _has_any_global_hook
    return grads

try:
    _acc_grads = _acc_hooks()
    _acc_error = None
except Exception as e:
    _acc_error = '%s: %s' % (type(e).__name__, e)
)PY";

constexpr int kFileInput = 257;  // Py_file_input
constexpr int kMethO = 0x0008;   // METH_O
constexpr int kMethNoArgs = 0x0004;  // METH_NOARGS

// PyMethodDef's layout, stable across CPython 3.x.
struct MethodDef {
  const char* name;
  void* meth;
  int flags;
  const char* doc;
};

PythonApi::Obj internHook(PythonApi::Obj, PythonApi::Obj path) {
  const PythonApi& api = PythonApi::get();
  const char* text = api.as_utf8(path);
  if (text == nullptr) return nullptr;  // the TypeError is set
  return api.long_from(static_cast<long>(ModulePaths::instance().intern(text)));
}

PythonApi::Obj enterHook(PythonApi::Obj, PythonApi::Obj id) {
  const PythonApi& api = PythonApi::get();
  long value = api.as_long(id);
  if (value < 0) return api.err_occurred() != nullptr ? nullptr : api.long_from(0);
  ModulePaths::instance().enter(static_cast<uint64_t>(value));
  api.incref(id);
  return id;
}

PythonApi::Obj gradNextHook(PythonApi::Obj, PythonApi::Obj path) {
  const PythonApi& api = PythonApi::get();
  const char* text = api.as_utf8(path);
  if (text == nullptr) return nullptr;
  PythonHooks::pendingGradient() = text;
  api.incref(path);
  return path;
}

PythonApi::Obj pythonExitHook(PythonApi::Obj, PythonApi::Obj) {
  const PythonApi& api = PythonApi::get();
  {
    // Stopping waits for the writer thread, which may be letting go of the
    // last reference to a tensor that has a Python object (a batch of
    // device statistics ending), and that takes the GIL: held here, the two
    // waited for each other (seen on torch 2.14, a run killed after 400 s).
    GilReleased released(api);
    Session::pythonExiting();
  }
  return api.long_from(0);
}

MethodDef g_python_exit{"_acc_python_exit", reinterpret_cast<void*>(&pythonExitHook), kMethNoArgs, nullptr};
MethodDef g_intern{"_acc_intern", reinterpret_cast<void*>(&internHook), kMethO, nullptr};
MethodDef g_enter{"_acc_enter", reinterpret_cast<void*>(&enterHook), kMethO, nullptr};
MethodDef g_grad_next{"_acc_grad_next", reinterpret_cast<void*>(&gradNextHook), kMethO, nullptr};

// Whether torch has been imported completely: its module exists and its
// spec no longer says _initializing (the recorder starts during the import).
bool torchImported(const PythonApi& api) {
  PythonApi::Obj torch = api.dict_get(api.module_dict(), "torch");  // borrowed
  if (torch == nullptr) return false;
  bool done = false;
  if (PythonApi::Obj spec = api.get_attr(torch, "__spec__")) {
    PythonApi::Obj initializing = api.get_attr(spec, "_initializing");
    done = initializing == nullptr || api.is_true(initializing) == 0;
    if (initializing != nullptr) api.decref(initializing);
    api.decref(spec);
  }
  api.err_clear();
  return done && api.dict_get(api.module_dict(), "torch.nn.modules.module") != nullptr;
}

}  // namespace

PythonHooks& PythonHooks::instance() {
  static PythonHooks* hooks = new PythonHooks;  // never destroyed: hooks may run during exit
  return *hooks;
}

std::string& PythonHooks::pendingGradient() {
  thread_local std::string name;
  return name;
}

void PythonHooks::install(bool quiet) {
  const PythonApi& api = PythonApi::get();
  if (!api.available()) {
    state_.store(kUnavailable);
    return;
  }
  if (!api.callable()) return;  // a thread without Python: another op will do
  int expected = kWaiting;
  if (!state_.compare_exchange_strong(expected, kInstalling)) return;
  int outcome = kWaiting;
  {
    Gil gil(api);
    if (torchImported(api)) {
      outcome = kUnavailable;
      std::string error = "the hooks could not be set up";
      PythonApi::Obj globals = api.dict_new();
      PythonApi::Obj builtins = api.import("builtins");
      PythonApi::Obj functions[] = {api.new_function(&g_intern, nullptr, nullptr),
                                    api.new_function(&g_enter, nullptr, nullptr),
                                    api.new_function(&g_grad_next, nullptr, nullptr),
                                    api.new_function(&g_python_exit, nullptr, nullptr)};
      bool ready = globals && builtins && functions[0] && functions[1] && functions[2] && functions[3] &&
                   api.dict_set(globals, "__builtins__", builtins) == 0 &&
                   api.dict_set(globals, g_intern.name, functions[0]) == 0 &&
                   api.dict_set(globals, g_enter.name, functions[1]) == 0 &&
                   api.dict_set(globals, g_grad_next.name, functions[2]) == 0 &&
                   api.dict_set(globals, g_python_exit.name, functions[3]) == 0;
      if (ready) {
        if (PythonApi::Obj result = api.run(kHooks, kFileInput, globals, globals, nullptr)) {
          api.decref(result);
          // _acc_error is None (not a str: no text) when the hooks are in.
          PythonApi::Obj message = api.dict_get(globals, "_acc_error");  // borrowed
          const char* text = message != nullptr ? api.as_utf8(message) : nullptr;
          if (text == nullptr) {
            outcome = kInstalled;
            grads_ = api.dict_get(globals, "_acc_grads");  // borrowed: kept below
            if (grads_ != nullptr) api.incref(grads_);
          } else {
            error = text;
          }
        }
      }
      api.err_clear();
      for (PythonApi::Obj o : functions) {
        if (o != nullptr) api.decref(o);
      }
      for (PythonApi::Obj o : {builtins, globals}) {
        if (o != nullptr) api.decref(o);
      }
      if (outcome != kInstalled && !quiet) {
        std::fprintf(stderr, "acc: records carry no module paths and no gradients (%s)\n", error.c_str());
      }
    }
  }
  state_.store(outcome);
}

bool PythonHooks::handOverGradients() {
  const PythonApi& api = PythonApi::get();
  if (!installed() || grads_ == nullptr || !api.callable()) return false;
  Gil gil(api);
  PythonApi::Obj result = api.call(grads_, nullptr);
  const bool ok = result != nullptr;
  if (ok) api.decref(result);
  api.err_clear();
  pendingGradient().clear();  // also when the Python call stopped half-way
  return ok;
}

}  // namespace acc::recorder
