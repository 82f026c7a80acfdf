# Finds a Python interpreter that can `import torch`, for the end-to-end
# tests and examples: ACC_PYTHON (cache or environment) first, then the
# usual names. The first python3 on PATH is often a different Python.
function(acc_find_torch_python out_var)
  set(candidates "$ENV{ACC_PYTHON}" "${ACC_PYTHON}")
  find_program(_path_python3 python3 NO_CACHE)
  list(APPEND candidates "${_path_python3}" /usr/bin/python3 /usr/local/bin/python3 /usr/bin/python)
  foreach(candidate IN LISTS candidates)
    if(NOT candidate OR NOT EXISTS "${candidate}")
      continue()
    endif()
    execute_process(COMMAND "${candidate}" -c "import torch; print(torch.__version__)"
      RESULT_VARIABLE rc OUTPUT_VARIABLE version ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0)
      message(STATUS "acc: Python with torch ${version}: ${candidate}")
      set(${out_var} "${candidate}" PARENT_SCOPE)
      return()
    endif()
    message(STATUS "acc: ${candidate} cannot import torch")
  endforeach()
  message(WARNING "acc: no Python interpreter can import torch (tried: ${candidates}). "
                  "Install python3-torch or set ACC_PYTHON; the Python tests will fail.")
  set(${out_var} "" PARENT_SCOPE)
endfunction()
