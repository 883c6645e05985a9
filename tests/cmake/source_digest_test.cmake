# cmake/SourceDigest.cmake names a tree by its contents: the same files give
# the same digest wherever the tree lies, any changed byte or file name gives
# another, and an unchanged digest leaves the header untouched.
#
#   cmake -DSCRIPT=<cmake/SourceDigest.cmake> -DWORK=<scratch directory> -P source_digest_test.cmake
file(REMOVE_RECURSE "${WORK}")

function(make_tree root content)
  file(WRITE "${root}/compiler/a.cc" "${content}")
  file(WRITE "${root}/replayer/b.h" "int b;\n")
  file(WRITE "${root}/list.txt" "replayer/b.h\ncompiler/a.cc\n")
endfunction()

function(digest_of root out_var)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DROOT=${root} -DLIST=${root}/list.txt
                          -DOUTPUT=${root}/digest.h -P "${SCRIPT}"
                  RESULT_VARIABLE result ERROR_VARIABLE error)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "SourceDigest.cmake failed on ${root}: ${error}")
  endif()
  file(READ "${root}/digest.h" header)
  if(NOT header MATCHES "#define SPREPLAY_SOURCE_DIGEST \"([0-9a-f]+)\"")
    message(FATAL_ERROR "no digest in ${root}/digest.h:\n${header}")
  endif()
  string(LENGTH "${CMAKE_MATCH_1}" length)
  if(NOT length EQUAL 64)
    message(FATAL_ERROR "the digest '${CMAKE_MATCH_1}' is not a SHA-256")
  endif()
  set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

make_tree("${WORK}/one" "int a;\n")
make_tree("${WORK}/elsewhere/two" "int a;\n")
make_tree("${WORK}/edited" "int a = 1;\n")
digest_of("${WORK}/one" one)
digest_of("${WORK}/elsewhere/two" two)
digest_of("${WORK}/edited" edited)
if(NOT one STREQUAL two)
  message(FATAL_ERROR "the same files in another place digest differently: ${one} ${two}")
endif()
if(one STREQUAL edited)
  message(FATAL_ERROR "an edited file left the digest as it was: ${one}")
endif()

# A file renamed, contents unchanged, is another tree.
make_tree("${WORK}/renamed" "int a;\n")
file(RENAME "${WORK}/renamed/compiler/a.cc" "${WORK}/renamed/compiler/c.cc")
file(WRITE "${WORK}/renamed/list.txt" "replayer/b.h\ncompiler/c.cc\n")
digest_of("${WORK}/renamed" renamed)
if(one STREQUAL renamed)
  message(FATAL_ERROR "a renamed file left the digest as it was: ${one}")
endif()

# Unchanged: the header is not written again (its time stamp stays older than
# a file written after it, a second later), so what includes it is not rebuilt.
file(WRITE "${WORK}/one/later" "")
execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1.1)
digest_of("${WORK}/one" again)
if(NOT again STREQUAL one)
  message(FATAL_ERROR "the same tree digested twice differs: ${one} ${again}")
endif()
file(TIMESTAMP "${WORK}/one/digest.h" header_time "%s")
file(TIMESTAMP "${WORK}/one/later" later_time "%s")
if(header_time GREATER later_time)
  message(FATAL_ERROR "an unchanged digest wrote the header again")
endif()
file(REMOVE_RECURSE "${WORK}")
