# The git hash goes into `xpuperf --version`, so every result names the code that made it.
# The Makefile reconfigures on every build, so the hash follows new commits.
set(XPUPERF_GIT_HASH "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                  OUTPUT_VARIABLE _hash OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0 AND _hash)
    set(XPUPERF_GIT_HASH "${_hash}")
    execute_process(COMMAND ${GIT_EXECUTABLE} status --porcelain --untracked-files=no
                    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                    OUTPUT_VARIABLE _dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_dirty)
      set(XPUPERF_GIT_HASH "${XPUPERF_GIT_HASH}-dirty")
    endif()
  endif()
endif()
configure_file(${CMAKE_SOURCE_DIR}/src/xpuperf/core/version.h.in
               ${CMAKE_BINARY_DIR}/generated/xpuperf/core/version.h @ONLY)
