# The slangpy and Slang builds spreplay serves (python/spreplay/supported_builds.json),
# and the build of spreplay for each Slang build other than the one this tree
# is configured with.
#
# Sets SPREPLAY_SUPPORTED_BUILDS_TEXT ("slangpy 0.42.0 / Slang 2026.5.2, ...")
# and generates build_info/slang_build.h (target spreplay_build_info).
# spreplay_add_other_slang_builds() builds spreplay's native library and tool
# once more per other Slang build, each against that build's own slang.h, and
# installs them beside this build's in spreplay/_lib/slang-<build>/.

file(READ "${PROJECT_SOURCE_DIR}/python/spreplay/supported_builds.json" _table)
string(JSON _count LENGTH "${_table}" builds)
math(EXPR _last "${_count} - 1")
set(SPREPLAY_SUPPORTED_BUILDS_TEXT "")
set(_slang_builds "")
foreach(_index RANGE ${_last})
  string(JSON _slangpy GET "${_table}" builds ${_index} slangpy)
  string(JSON _slang GET "${_table}" builds ${_index} slang)
  list(APPEND _texts "slangpy ${_slangpy} / Slang ${_slang}")
  if(NOT _slang IN_LIST _slang_builds)
    list(APPEND _slang_builds ${_slang})
    # The first release that bundles each Slang build provides its headers.
    set(_slangpy_of_${_slang} ${_slangpy})
  endif()
endforeach()
list(JOIN _texts ", " SPREPLAY_SUPPORTED_BUILDS_TEXT)

if(NOT Slang_BUILD IN_LIST _slang_builds)
  message(FATAL_ERROR "spreplay is configured with the Slang of ${Slang_PACKAGE_DIR} (build "
    "'${Slang_BUILD}'), which python/spreplay/supported_builds.json does not list; it supports "
    "${SPREPLAY_SUPPORTED_BUILDS_TEXT} (docs/adding-a-slangpy-release.md adds one)")
endif()

configure_file("${PROJECT_SOURCE_DIR}/cmake/slang_build.h.in"
               "${PROJECT_BINARY_DIR}/generated/build_info/slang_build.h" @ONLY)
add_library(spreplay_build_info INTERFACE)
target_include_directories(spreplay_build_info INTERFACE "${PROJECT_BINARY_DIR}/generated")

function(spreplay_add_other_slang_builds stage)
  include(ExternalProject)
  if(NOT Python3_EXECUTABLE)
    find_package(Python3 COMPONENTS Interpreter REQUIRED)
  endif()
  foreach(build IN LISTS _slang_builds)
    if(build STREQUAL Slang_BUILD)
      continue()
    endif()
    set(slangpy_version ${_slangpy_of_${build}})
    set(slangpy_root "${PROJECT_BINARY_DIR}/slang-builds/slangpy-${slangpy_version}")
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/tools/fetch_slangpy_abi.py"
              ${slangpy_version} "${slangpy_root}"
      RESULT_VARIABLE fetched)
    if(NOT fetched EQUAL 0)
      message(FATAL_ERROR "could not fetch slangpy ${slangpy_version}'s Slang headers (Slang ${build}); "
        "give its wheel in SPREPLAY_SLANGPY_WHEELS, or configure with -DSPREPLAY_ALL_SLANG_BUILDS=OFF "
        "for a spreplay that serves Slang ${Slang_BUILD} only")
    endif()
    # Where this build found its dependencies, so that the other finds them too.
    set(forwarded "")
    foreach(variable CMAKE_PREFIX_PATH CMAKE_TOOLCHAIN_FILE CMAKE_CXX_FLAGS)
      if(DEFINED ${variable} AND NOT "${${variable}}" STREQUAL "")
        string(REPLACE ";" "|" value "${${variable}}")
        list(APPEND forwarded "-D${variable}=${value}")
      endif()
    endforeach()
    ExternalProject_Add(spreplay_slang_${build}
      SOURCE_DIR "${PROJECT_SOURCE_DIR}"
      BINARY_DIR "${PROJECT_BINARY_DIR}/slang-builds/build-${build}"
      CMAKE_ARGS -DSLANGPY_DIR=${slangpy_root}/slangpy
                 -DSPREPLAY_SLANG_BUILD_ONLY=ON
                 -DSPREPLAY_BUILD_TESTS=OFF
                 -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
                 -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}
                 -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
                 -DCMAKE_INSTALL_PREFIX=${stage}
                 -DPython3_EXECUTABLE=${Python3_EXECUTABLE}
                 ${forwarded}
      LIST_SEPARATOR |
      # The two targets that build installs, not the whole tree (the default
      # install step would build everything first).
      BUILD_COMMAND ${CMAKE_COMMAND} --build <BINARY_DIR> --target spreplay_native spreplay
      INSTALL_COMMAND ${CMAKE_COMMAND} --install <BINARY_DIR>
      BUILD_ALWAYS ON
      USES_TERMINAL_BUILD ON)
  endforeach()
endfunction()
