# spreplay's CMake integration: turns recorded traces into a kernel archive as
# a build step, rebuilt whenever a trace changes.
#
#   execute_process(COMMAND ${Python3_EXECUTABLE} -c "import spreplay; print(spreplay.cmake_dir())"
#                   OUTPUT_VARIABLE spreplay_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
#   find_package(spreplay CONFIG REQUIRED)
#   spreplay_add_archive(app_kernels
#     OUTPUT ${CMAKE_BINARY_DIR}/kernels.sprk
#     TRACES traces/train.capnp traces/serve.capnp
#     ARCHES 80 90              # default: spreplay's own list
#     [JOBS n] [CACHE dir] [NO_MODULES] [ALL])
#
# The tool is SPREPLAY_EXECUTABLE: the `spreplay` command installed with the
# package, found on PATH unless the cache variable names it.

if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "spreplay_add_archive needs CMake 3.20 or newer")
endif()

find_program(SPREPLAY_EXECUTABLE spreplay DOC "the spreplay command (pip install spreplay)")

function(spreplay_add_archive target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_MODULES;ALL" "OUTPUT;JOBS;CACHE" "TRACES;ARCHES")
  if(NOT arg_OUTPUT OR NOT arg_TRACES)
    message(FATAL_ERROR "spreplay_add_archive(${target}): OUTPUT and TRACES are required")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "spreplay_add_archive(${target}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT SPREPLAY_EXECUTABLE)
    message(FATAL_ERROR "spreplay_add_archive(${target}): no `spreplay` command found; "
                        "pip install spreplay, or set SPREPLAY_EXECUTABLE")
  endif()

  set(traces "")
  foreach(trace IN LISTS arg_TRACES)
    cmake_path(ABSOLUTE_PATH trace BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    list(APPEND traces "${trace}")
  endforeach()
  set(output "${arg_OUTPUT}")
  cmake_path(ABSOLUTE_PATH output BASE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}" NORMALIZE)

  set(options "")
  if(arg_ARCHES)
    list(JOIN arg_ARCHES "," arches)
    list(APPEND options --arch "${arches}")
  endif()
  if(arg_JOBS)
    list(APPEND options --jobs "${arg_JOBS}")
  endif()
  if(arg_CACHE)
    list(APPEND options --cache "${arg_CACHE}")
  endif()
  if(arg_NO_MODULES)
    list(APPEND options --no-modules)
  endif()

  # The archive depends on the traces' contents alone (and on the Slang and
  # CUDA the tool finds, which a rebuild of the target picks up).
  add_custom_command(
    OUTPUT "${output}"
    COMMAND "${SPREPLAY_EXECUTABLE}" compile ${traces} -o "${output}" ${options}
    DEPENDS ${traces}
    COMMENT "spreplay: compiling ${target}"
    VERBATIM)
  if(arg_ALL)
    add_custom_target(${target} ALL DEPENDS "${output}")
  else()
    add_custom_target(${target} DEPENDS "${output}")
  endif()
  set_target_properties(${target} PROPERTIES SPREPLAY_ARCHIVE "${output}")
endfunction()
