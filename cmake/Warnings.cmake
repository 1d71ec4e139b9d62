# Warnings for the project's own targets (not for third-party headers).
function(xpuperf_warnings target)
  # C++ sources only: nvcc takes host-compiler warnings differently.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow
                                           -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion>)
  if(XPUPERF_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
