# Build time on small machines (README "Build time"): LibTorch's headers are most of a LibTorch
# file's compile time, so they are parsed once into a precompiled header that every LibTorch
# target shares; the torch-free libraries compile as unity builds (a few sources a compiler run).

option(XPUPERF_TORCH_PCH "Precompile LibTorch's headers once for every LibTorch target" ON)
option(XPUPERF_UNITY_BUILD "Compile the torch-free libraries as unity builds" ON)
# Sources a unity batch holds: few enough that two cores get several batches a library. CI
# builds with 0 (one batch a library) too, so that names clashing between sources show.
set(XPUPERF_UNITY_BATCH 6 CACHE STRING "Sources a unity batch holds (0: the whole target)")

# Even with the precompiled header a LibTorch file pays about 10 s before its first line here
# (GCC 12 on 2 cores: an empty file that includes <torch/torch.h> through the PCH spends that in
# "lang. deferred", the instantiations LibTorch's headers ask of every file), so the LibTorch
# targets compile as unity batches of a few sources too: the fixed cost is paid once a batch.
# Clang does those instantiations once, in the precompiled header (CMake passes
# -fpch-instantiate-templates when it builds it): about 2 s an empty file, and a third of GCC's
# time for our LibTorch files, which is why `make` picks clang++ where it is installed.
set(XPUPERF_TORCH_UNITY_BATCH 4 CACHE STRING "LibTorch sources a unity batch holds (1: no unity build)")

# The header precompiled; the build's own test (tests/build/pch_inputs_test.sh) sets a small one.
set(XPUPERF_PCH_HEADER "<torch/torch.h>" CACHE STRING "The header xpuperf_torch_pch precompiles")

# Clang refuses a precompiled header when the mtime of any header it read differs from the one it
# recorded, and make cannot see that: the installer (apt) gives a header the mtime it has in its
# package, older than the build. Comparing contents where the mtimes differ keeps the header
# usable after a reinstall; a real change of contents is caught by scripts/build.sh, which then
# removes the stale header so that it is built again.
set(XPUPERF_PCH_OPTIONS "")
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(XPUPERF_PCH_OPTIONS -fpch-validate-input-files-content)
endif()

# xpuperf_torch_pch(TARGET): the first target called with makes the precompiled header
# (XPUPERF_PCH_HEADER); the others reuse it. GCC falls back to the plain header when the precompiled
# one does not fit a target's flags; -Winvalid-pch says so in the build log. The target is built
# in unity batches of XPUPERF_TORCH_UNITY_BATCH sources.
function(xpuperf_torch_pch target)
  if(XPUPERF_UNITY_BUILD AND XPUPERF_TORCH_UNITY_BATCH GREATER 1)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${XPUPERF_TORCH_UNITY_BATCH})
  endif()
  if(NOT XPUPERF_TORCH_PCH)
    return()
  endif()
  get_property(owner GLOBAL PROPERTY XPUPERF_TORCH_PCH_OWNER)
  if(NOT owner)
    target_precompile_headers(${target} PRIVATE ${XPUPERF_PCH_HEADER})
    set_property(GLOBAL PROPERTY XPUPERF_TORCH_PCH_OWNER ${target})
  else()
    target_precompile_headers(${target} REUSE_FROM ${owner})
  endif()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Winvalid-pch>)
  foreach(option IN LISTS XPUPERF_PCH_OPTIONS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${option}>)
  endforeach()
endfunction()

# xpuperf_unity(TARGET...): torch-free targets only (a LibTorch unity batch would be one long,
# memory-hungry compiler run, and the PCH already saves most of their time).
function(xpuperf_unity)
  if(XPUPERF_UNITY_BUILD)
    set_target_properties(${ARGN} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${XPUPERF_UNITY_BATCH})
  endif()
endfunction()
