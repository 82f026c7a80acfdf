#include "recorder/python/python_api.h"

#include <dlfcn.h>

namespace acc::recorder {
namespace {

template <typename F>
bool resolve(F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return fn != nullptr;
}

}  // namespace

const PythonApi& PythonApi::get() {
  static const PythonApi api;
  return api;
}

PythonApi::PythonApi() {
  if (!resolve(is_finalizing, "Py_IsFinalizing")) resolve(is_finalizing, "_Py_IsFinalizing");
  // All or nothing: a partial API (a stripped or unusual interpreter) is none.
  bool all = resolve(is_initialized, "Py_IsInitialized") &&
             resolve(this_thread_state, "PyGILState_GetThisThreadState") &&
             resolve(ensure, "PyGILState_Ensure") && resolve(release, "PyGILState_Release") &&
             resolve(save_thread, "PyEval_SaveThread") && resolve(restore_thread, "PyEval_RestoreThread") &&
             resolve(get_frame, "PyEval_GetFrame") && resolve(frame_code, "PyFrame_GetCode") &&
             resolve(frame_back, "PyFrame_GetBack") && resolve(frame_line, "PyFrame_GetLineNumber") &&
             resolve(get_attr, "PyObject_GetAttrString") && resolve(is_true, "PyObject_IsTrue") &&
             resolve(as_utf8, "PyUnicode_AsUTF8") && resolve(long_from, "PyLong_FromLong") &&
             resolve(as_long, "PyLong_AsLong") && resolve(incref, "Py_IncRef") &&
             resolve(decref, "Py_DecRef") && resolve(err_occurred, "PyErr_Occurred") &&
             resolve(err_clear, "PyErr_Clear") && resolve(module_dict, "PyImport_GetModuleDict") &&
             resolve(dict_new, "PyDict_New") && resolve(dict_get, "PyDict_GetItemString") &&
             resolve(dict_set, "PyDict_SetItemString") && resolve(import, "PyImport_ImportModule") &&
             resolve(new_function, "PyCFunction_NewEx") && resolve(run, "PyRun_StringFlags") &&
             resolve(call, "PyObject_CallObject");
  if (!all) ensure = nullptr;
}

bool PythonApi::callable() const {
  return available() && is_initialized() && this_thread_state() != nullptr &&
         (is_finalizing == nullptr || !is_finalizing());
}

}  // namespace acc::recorder
