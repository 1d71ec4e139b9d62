// NVIDIA's kernels for xpuperf's operators, registered with the dispatcher (nvidia_ops.h). The same
// functions serve both keys: AutogradCUDA is where calls arrive with autograd on (the functions
// record their own backward or call the composite operators, which record theirs); the CUDA key is
// where they arrive with autograd's keys excluded (inference mode).

#include "nvidia_ops.h"

namespace xpuperf::nvidia {
namespace {
void register_all(torch::Library& m) {
  register_norm_ops(m);
  register_decode_ops(m);
  register_training_ops(m);
  register_convolution_ops(m);
}
}  // namespace
}  // namespace xpuperf::nvidia

TORCH_LIBRARY_IMPL(xpuperf, CUDA, m) {
  xpuperf::nvidia::register_all(m);
}
TORCH_LIBRARY_IMPL(xpuperf, AutogradCUDA, m) {
  xpuperf::nvidia::register_all(m);
}
