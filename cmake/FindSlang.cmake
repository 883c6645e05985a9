# Finds the Slang header and library that ship inside the slangpy wheel, so the
# native code is always built against the exact Slang the user's slangpy runs.
#
# Sets Slang_FOUND, Slang_INCLUDE_DIR, Slang_LIBRARY, Slang_PACKAGE_DIR,
# Slang_BUILD (the build tag the wheel's library is named after, e.g. 2026.12)
# and the imported target Slang::slang. SLANGPY_DIR overrides the lookup.

if(NOT SLANGPY_DIR)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  # find_spec locates the package without importing it: importing slangpy
  # would load the whole native runtime just to learn a path.
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" -c
      "import importlib.util as u; s = u.find_spec('slangpy'); print(s.submodule_search_locations[0] if s else '')"
    OUTPUT_VARIABLE SLANGPY_DIR
    OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()

find_path(Slang_INCLUDE_DIR slang.h PATHS "${SLANGPY_DIR}/include" NO_DEFAULT_PATH)
file(GLOB _slang_candidates "${SLANGPY_DIR}/libslang-compiler.so.*")
list(SORT _slang_candidates)
list(GET _slang_candidates -1 Slang_LIBRARY)
set(Slang_PACKAGE_DIR "${SLANGPY_DIR}")
cmake_path(GET Slang_LIBRARY FILENAME _slang_file_name)
string(REGEX REPLACE "^libslang-compiler\\.so\\.0\\." "" Slang_BUILD "${_slang_file_name}")

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Slang
  REQUIRED_VARS Slang_INCLUDE_DIR Slang_LIBRARY
  FAIL_MESSAGE "slangpy with its bundled Slang was not found: install a supported slangpy (python/spreplay/supported_builds.json) into the Python used for the build, or set SLANGPY_DIR")

if(Slang_FOUND AND NOT TARGET Slang::headers)
  add_library(Slang::headers INTERFACE IMPORTED)
  set_target_properties(Slang::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${Slang_INCLUDE_DIR}")
  add_library(Slang::slang SHARED IMPORTED)
  set_target_properties(Slang::slang PROPERTIES
    IMPORTED_LOCATION "${Slang_LIBRARY}"
    IMPORTED_NO_SONAME FALSE
    INTERFACE_INCLUDE_DIRECTORIES "${Slang_INCLUDE_DIR}")
endif()
