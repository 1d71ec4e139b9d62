#pragma once
// The simulated device as PyTorch sees it: PrivateUse1 with its own allocator, device guard and
// the few ATen kernels that must know where its memory is; every other operator runs through
// ATen's CPU fallback (inputs copied to the host, the CPU kernel, results copied back).

#include <string>

namespace xpuperf::sim {

// How many sim devices this host has: the entries of XPUPERF_SIM_VISIBLE_DEVICES when set, else
// XPUPERF_SIM_DEVICES (default 8).
int device_count();

// Sets the allocator (the guard and the kernels register when the library loads).
void register_device();

}  // namespace xpuperf::sim
