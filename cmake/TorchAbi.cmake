# Torch's CMake config gives the libstdc++ ABI flag (TORCH_CXX_FLAGS) but not
# whether torch was built with NDEBUG, which changes at::RecordFunction's
# layout. Build a probe each way, run it against the installed libtorch and
# keep the setting whose layout matches. The probe links torch_cpu and c10 by
# their files, not through torch's imported targets: pip's wheels name
# protobuf::libprotobuf in those targets' link interfaces, which try_run's
# generated project cannot resolve under CMake 4.
function(acc_detect_torch_ndebug out_var)
  acc_find_torch_library(torch_cpu ACC_TORCH_CPU_LIBRARY)
  acc_find_torch_library(c10 ACC_C10_LIBRARY)
  foreach(variant NDEBUG DEBUG)
    set(defs ${TORCH_CXX_FLAGS})
    if(variant STREQUAL "NDEBUG")
      list(APPEND defs -DNDEBUG)
    endif()
    try_run(run_result compile_result
      ${CMAKE_BINARY_DIR}/abi_probe_${variant}
      SOURCES ${PROJECT_SOURCE_DIR}/recorder/session/abi_check.cpp
              ${PROJECT_SOURCE_DIR}/cmake/abi_probe_main.cpp
      COMPILE_DEFINITIONS ${defs}
      CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${TORCH_INCLUDE_DIRS};${PROJECT_SOURCE_DIR}"
      LINK_LIBRARIES ${ACC_TORCH_CPU_LIBRARY} ${ACC_C10_LIBRARY}
      CXX_STANDARD ${CMAKE_CXX_STANDARD}
      COMPILE_OUTPUT_VARIABLE compile_out
      RUN_OUTPUT_VARIABLE run_out)
    if(compile_result AND run_result EQUAL 0)
      message(STATUS "acc: at::RecordFunction layout matches libtorch with ${variant}")
      set(${out_var} ${variant} PARENT_SCOPE)
      return()
    endif()
    if(NOT compile_result)
      message(STATUS "acc: ABI probe (${variant}) did not compile:\n${compile_out}")
    else()
      message(STATUS "acc: ABI probe (${variant}): ${run_out}")
    endif()
  endforeach()
  message(FATAL_ERROR "acc: no compiler setting matches the at::RecordFunction layout of the "
                      "torch in ${Torch_DIR}; see the probe output above")
endfunction()

# Finds lib<name>.so of the torch CMake found, into the cache variable `var`.
function(acc_find_torch_library name var)
  find_library(${var} ${name}
    HINTS "${TORCH_INSTALL_PREFIX}/lib" "${Torch_DIR}/../../../lib" "${Torch_DIR}/../..")
  if(NOT ${var})
    message(FATAL_ERROR "acc: cannot find lib${name} next to ${Torch_DIR}")
  endif()
endfunction()

# Writes what the core is built against (libacc_core.torch) for the preload
# shim, which compares it with the libtorch_cpu a process actually loads.
function(acc_write_torch_identity path)
  acc_find_torch_library(torch_cpu ACC_TORCH_CPU_LIBRARY)
  get_filename_component(real "${ACC_TORCH_CPU_LIBRARY}" REALPATH)
  find_program(ACC_READELF readelf REQUIRED)
  execute_process(COMMAND ${ACC_READELF} -n "${real}" OUTPUT_VARIABLE notes ERROR_QUIET)
  string(REGEX MATCH "Build ID: ([0-9a-f]+)" _ "${notes}")
  set(build_id "${CMAKE_MATCH_1}")
  file(WRITE "${path}" "version=${Torch_VERSION}\nbuild_id=${build_id}\nlibrary=${real}\n")
  message(STATUS "acc: recorder core built for torch ${Torch_VERSION} (${real}, build id ${build_id})")
endfunction()

# Links `target` with torch and compiles it with torch's ABI flags and the
# NDEBUG setting acc_detect_torch_ndebug found (PUBLIC: also for the targets
# that link it, as the recorder's headers carry at::RecordFunction).
function(acc_use_torch target scope)
  target_link_libraries(${target} ${scope} ${TORCH_LIBRARIES})
  target_compile_options(${target} ${scope} ${TORCH_CXX_FLAGS})
  if(ACC_TORCH_NDEBUG STREQUAL "NDEBUG")
    target_compile_definitions(${target} ${scope} NDEBUG)
  else()
    target_compile_options(${target} ${scope} -UNDEBUG)
  endif()
endfunction()
