# Finds a Python interpreter that can `import torch`, for the end-to-end
# tests and examples: ACC_PYTHON (cache or environment) first, then the
# usual names. The first python3 on PATH is often a different Python.
function(acc_find_torch_python out_var)
  # Named in the environment: that Python or an error, never another torch.
  set(named "$ENV{ACC_PYTHON}")
  if(NOT named STREQUAL "")
    if(NOT EXISTS "${named}")
      message(FATAL_ERROR "acc: ACC_PYTHON=${named} does not exist; name a Python that can import torch, or unset it to probe")
    endif()
    set(candidates "${named}")
  else()
    set(candidates "${ACC_PYTHON}")
    find_program(_path_python3 python3 NO_CACHE)
    list(APPEND candidates "${_path_python3}" /usr/bin/python3 /usr/local/bin/python3 /usr/bin/python)
  endif()
  foreach(candidate IN LISTS candidates)
    if(NOT candidate OR NOT EXISTS "${candidate}")
      continue()
    endif()
    execute_process(COMMAND "${candidate}" -c "import torch; print(torch.__version__)"
      RESULT_VARIABLE rc OUTPUT_VARIABLE version ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0)
      message(STATUS "acc: Python with torch ${version}: ${candidate}")
      # Kept, so that configuring this build again without ACC_PYTHON in the
      # environment stays with this torch instead of probing another.
      set(ACC_PYTHON "${candidate}" CACHE FILEPATH "The Python whose torch acc is built against")
      set(${out_var} "${candidate}" PARENT_SCOPE)
      return()
    endif()
    if(NOT named STREQUAL "")
      message(FATAL_ERROR "acc: ACC_PYTHON=${named} cannot import torch; name a Python that can, or unset it to probe")
    endif()
    message(STATUS "acc: ${candidate} cannot import torch")
  endforeach()
  message(WARNING "acc: no Python interpreter can import torch (tried: ${candidates}). "
                  "Install python3-torch or set ACC_PYTHON; the Python tests will fail.")
  set(${out_var} "" PARENT_SCOPE)
endfunction()

# Points CMake at the torch of `python`, unless the user named a Torch_DIR:
# its config first in CMAKE_PREFIX_PATH (torch.utils.cmake_prefix_path) and
# its libraries pinned (acc_pin_torch_libraries). One Python start, as
# importing torch takes seconds.
function(acc_torch_from_python python)
  if(NOT python OR Torch_DIR)
    return()
  endif()
  execute_process(COMMAND "${python}" -c
    "import os, torch, torch.utils; print(torch.utils.cmake_prefix_path); print(os.path.dirname(torch.__file__)); print(torch.__version__.split('+')[0])"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    return()
  endif()
  string(REPLACE "\n" ";" out "${out}")
  list(GET out 0 prefix)
  list(GET out 1 torch_dir)
  list(GET out 2 torch_version)
  if(EXISTS "${prefix}")
    message(STATUS "acc: torch's CMake config from ${python}: ${prefix}")
    set(CMAKE_PREFIX_PATH "${prefix};${CMAKE_PREFIX_PATH}" PARENT_SCOPE)
  endif()
  acc_pin_torch_libraries("${python}" "${torch_dir}" "${torch_version}")
endfunction()

# The libstdc++ ABI that torch's CMake config asks for (TORCH_CXX_FLAGS) must
# be the one the Python's torch was built with; a mismatch fails at link or
# load time with missing std::string symbols, so say it at configure time.
function(acc_check_torch_abi_flag python)
  if(NOT python)
    return()
  endif()
  execute_process(COMMAND "${python}" -c "import torch; print(int(torch.compiled_with_cxx11_abi()))"
    RESULT_VARIABLE rc OUTPUT_VARIABLE abi ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    return()
  endif()
  # Torch 2.7 and later build only with the new ABI, libstdc++'s default,
  # and their config names no flag: then the flag torch reports is added.
  if(NOT "${TORCH_CXX_FLAGS}" MATCHES "_GLIBCXX_USE_CXX11_ABI")
    if(abi STREQUAL "0")
      set(TORCH_CXX_FLAGS ${TORCH_CXX_FLAGS} -D_GLIBCXX_USE_CXX11_ABI=0 PARENT_SCOPE)
    endif()
    message(STATUS "acc: libstdc++ ABI flag _GLIBCXX_USE_CXX11_ABI=${abi}, as torch reports")
    return()
  endif()
  if(NOT "${TORCH_CXX_FLAGS}" MATCHES "_GLIBCXX_USE_CXX11_ABI=${abi}")
    message(FATAL_ERROR "acc: ${python}'s torch uses _GLIBCXX_USE_CXX11_ABI=${abi} but the "
                        "TorchConfig.cmake found (${Torch_DIR}) asks for '${TORCH_CXX_FLAGS}': "
                        "they are different torch installations; set Torch_DIR or ACC_PYTHON to one")
  endif()
  message(STATUS "acc: libstdc++ ABI flag _GLIBCXX_USE_CXX11_ABI=${abi}, as torch reports")
endfunction()

# Pins the libraries torch's CMake config looks up by name to the torch of
# `python` (in `torch_dir`, of `torch_version`). Its find_library() calls search the system's paths before
# torch's own folder, so with Debian's libtorch installed a build against a
# virtual environment's torch linked Debian's libc10.so (and then loaded
# Debian's torch next to the environment's). Also, torch before 2.5 built
# with CUDA asks for CUDA::nvToolsExt, which CUDA 13 toolkits no longer
# ship: where the wheels bring libnvToolsExt, it stands in.
function(acc_pin_torch_libraries python torch_dir torch_version)
  if(NOT EXISTS "${torch_dir}/lib")
    return()
  endif()
  foreach(pair "TORCH_LIBRARY;torch" "c10_LIBRARY;c10" "C10_CUDA_LIBRARY;c10_cuda"
               "CAFFE2_NVRTC_LIBRARY;caffe2_nvrtc")
    list(GET pair 0 var)
    list(GET pair 1 name)
    if(NOT DEFINED CACHE{${var}} AND EXISTS "${torch_dir}/lib/lib${name}.so")
      # The file itself: Debian's torch/lib holds links to the system's copies.
      get_filename_component(file "${torch_dir}/lib/lib${name}.so" REALPATH)
      set(${var} "${file}" CACHE FILEPATH "lib${name} of ${python}'s torch")
    endif()
  endforeach()
  # A PyPI wheel's libtorch_cuda finds NCCL, cuDNN and the rest in the
  # wheels' nvidia/*/lib through its $ORIGIN rpath, which the linker does
  # not read: it took the CUDA toolkit's older libnccl.so.2 from the
  # system's paths and failed on symbols only the wheel's NCCL has.
  # Cached, as a later configure skips this function (acc_use_wheel_libraries).
  file(GLOB wheel_lib_dirs LIST_DIRECTORIES true "${torch_dir}/../nvidia/*/lib")
  set(dirs "")
  foreach(dir IN LISTS wheel_lib_dirs)
    if(IS_DIRECTORY "${dir}")
      get_filename_component(dir "${dir}" REALPATH)
      list(APPEND dirs "${dir}")
    endif()
  endforeach()
  set(ACC_TORCH_WHEEL_LIB_DIRS "${dirs}" CACHE INTERNAL "nvidia/*/lib of ${python}'s torch")
  file(GLOB nvtx "${torch_dir}/../nvidia/nvtx/lib/libnvToolsExt.so.*")
  set(ACC_TORCH_WHEEL_NVTX "" CACHE INTERNAL "")
  if(nvtx AND torch_version VERSION_LESS 2.5)
    list(GET nvtx 0 nvtx)
    set(ACC_TORCH_WHEEL_NVTX "${nvtx}" CACHE INTERNAL "libnvToolsExt of ${python}'s torch, for CUDA::nvToolsExt")
    if(NOT DEFINED CACHE{LIBNVTOOLSEXT})
      set(LIBNVTOOLSEXT "${nvtx}" CACHE FILEPATH "libnvToolsExt of ${python}'s torch")
    endif()
  endif()
endfunction()

# What acc_pin_torch_libraries found in torch's wheels, applied at every
# configure (a later one skips acc_torch_from_python, as Torch_DIR is then
# cached): the linker finds the wheels' libraries as the loader does, for
# every target, and the wheel's libnvToolsExt stands in for CUDA's.
function(acc_use_wheel_libraries)
  foreach(dir IN LISTS ACC_TORCH_WHEEL_LIB_DIRS)
    set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY LINK_OPTIONS "LINKER:-rpath-link,${dir}")
  endforeach()
  if(ACC_TORCH_WHEEL_NVTX AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt SHARED IMPORTED GLOBAL)
    set_target_properties(CUDA::nvToolsExt PROPERTIES IMPORTED_LOCATION "${ACC_TORCH_WHEEL_NVTX}")
  endif()
endfunction()

# Torch before 2.4 finds CUDA twice, with the old FindCUDA (the first nvcc
# on PATH, its folder's parent as the toolkit) and with CUDAToolkit (where
# nvcc says it lives), and stops on "Found two conflicting CUDA installs"
# when they differ: a machine whose PATH has a /usr/local/bin/nvcc wrapper
# of /usr/local/cuda-13.0/bin/nvcc, and /usr/local/include holding CUDA's
# headers, gave /usr/local against /usr/local/cuda-13.0. nvcc's own TOP
# names the toolkit for both. A toolkit the user names comes first.
function(acc_pin_cuda_toolkit)
  if(DEFINED CUDA_TOOLKIT_ROOT_DIR OR DEFINED CUDAToolkit_ROOT OR DEFINED CMAKE_CUDA_COMPILER
     OR DEFINED ENV{CUDA_PATH} OR DEFINED ENV{CUDACXX})
    return()
  endif()
  find_program(ACC_NVCC nvcc)
  if(NOT ACC_NVCC)
    return()
  endif()
  execute_process(COMMAND "${ACC_NVCC}" --dryrun -x cu -c /dev/null -o /dev/null
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT "${out}${err}" MATCHES "#\\$ TOP=([^\n]*)")
    return()
  endif()
  get_filename_component(root "${CMAKE_MATCH_1}" REALPATH)
  if(EXISTS "${root}/bin/nvcc")
    set(CUDA_TOOLKIT_ROOT_DIR "${root}" CACHE PATH "CUDA toolkit (where ${ACC_NVCC} lives)")
    set(CMAKE_CUDA_COMPILER "${root}/bin/nvcc" CACHE FILEPATH "nvcc of ${root}")
  endif()
endfunction()
