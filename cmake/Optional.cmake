# LibTorch and CUDA are optional: the orchestrator (core, launch, monitor, report, cli) builds
# without them. Each option is AUTO (use when found), ON (must be found) or OFF.

macro(xpuperf_check_option name)
  if(NOT ${name} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${name} must be AUTO, ON or OFF, got '${${name}}'")
  endif()
endmacro()

# AUTO builds the CUDA parts only where they can run: nvcc and an NVIDIA driver with a GPU. A
# machine image with the CUDA toolkit but no GPU (a CI or build host) would otherwise spend minutes
# compiling kernels it can never launch; XPUPERF_WITH_CUDA=ON builds them anyway (cross-building
# for a GPU machine). XPUPERF_CUDA_REASON says why, in the configure line.
macro(xpuperf_find_optional_cuda)
  xpuperf_check_option(XPUPERF_WITH_CUDA)
  set(XPUPERF_HAVE_CUDA OFF)
  set(XPUPERF_CUDA_REASON "XPUPERF_WITH_CUDA=OFF")
  set(xpuperf_cuda_wanted ON)
  if(XPUPERF_WITH_CUDA STREQUAL "OFF")
    set(xpuperf_cuda_wanted OFF)
  elseif(XPUPERF_WITH_CUDA STREQUAL "AUTO" AND NOT EXISTS "/dev/nvidiactl" AND NOT EXISTS "/proc/driver/nvidia/version")
    set(xpuperf_cuda_wanted OFF)
    set(XPUPERF_CUDA_REASON "AUTO: no NVIDIA GPU on this machine (no /dev/nvidiactl); -DXPUPERF_WITH_CUDA=ON builds them anyway")
  endif()
  if(xpuperf_cuda_wanted)
    include(CheckLanguage)
    check_language(CUDA)
    # Hopper (H100, H200) unless told otherwise: FP8 GEMMs need 8.9+, and one architecture
    # keeps the build short.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    if(CMAKE_CUDA_COMPILER)
      enable_language(CUDA)
      find_package(CUDAToolkit)
      if(CUDAToolkit_FOUND)
        set(XPUPERF_HAVE_CUDA ON)
        set(XPUPERF_CUDA_REASON "${XPUPERF_WITH_CUDA}: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
      endif()
    endif()
    if(NOT XPUPERF_HAVE_CUDA)
      set(XPUPERF_CUDA_REASON "${XPUPERF_WITH_CUDA}: no CUDA compiler/toolkit found (set CUDACXX or put nvcc on PATH)")
    endif()
    if(XPUPERF_WITH_CUDA STREQUAL "ON" AND NOT XPUPERF_HAVE_CUDA)
      message(FATAL_ERROR "XPUPERF_WITH_CUDA=ON but no CUDA compiler/toolkit was found "
                          "(set CUDACXX or put nvcc on PATH)")
    endif()
  endif()
endmacro()

macro(xpuperf_find_optional_torch)
  xpuperf_check_option(XPUPERF_WITH_TORCH)
  set(XPUPERF_HAVE_TORCH OFF)
  if(NOT XPUPERF_WITH_TORCH STREQUAL "OFF")
    find_package(Torch QUIET)
    if(Torch_FOUND OR TORCH_FOUND)
      set(XPUPERF_HAVE_TORCH ON)
      # TORCH_CXX_FLAGS is one string ("-D_GLIBCXX_USE_CXX11_ABI=1"); compile options want a list.
      separate_arguments(XPUPERF_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
      # PyTorch's CUDA builds carry ProcessGroupNCCL and ATen's CUDA API (streams, CUDA graphs);
      # Debian's CPU build does not.
      set(XPUPERF_HAVE_NCCL OFF)
      set(XPUPERF_HAVE_TORCH_CUDA OFF)
      if(XPUPERF_HAVE_CUDA AND EXISTS "${TORCH_INSTALL_PREFIX}/lib/libtorch_cuda.so")
        set(XPUPERF_HAVE_NCCL ON)
        set(XPUPERF_HAVE_TORCH_CUDA ON)
      endif()
      # ProcessGroupGloo's header needs Gloo's headers, which PyTorch wheels do not ship
      # (Debian: libgloo-dev). Without them the gloo backend is left out.
      find_path(XPUPERF_GLOO_INCLUDE_DIR gloo/algorithm.h)
      set(XPUPERF_HAVE_GLOO OFF)
      if(XPUPERF_GLOO_INCLUDE_DIR)
        set(XPUPERF_HAVE_GLOO ON)
      endif()
    elseif(XPUPERF_WITH_TORCH STREQUAL "ON")
      message(FATAL_ERROR "XPUPERF_WITH_TORCH=ON but LibTorch was not found: install Debian's "
                          "libtorch-dev or add PyTorch's torch.utils.cmake_prefix_path to CMAKE_PREFIX_PATH")
    endif()
  endif()
endmacro()
