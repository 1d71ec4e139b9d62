# Warnings for the project's own targets (not for third-party headers).
function(xpuperf_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wconversion -Wno-sign-conversion)
  if(XPUPERF_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
