// The declaration of the process switches run_setup.cpp applies (core/switch_spec.h), beside its strategy: torch-free,
// so that `xpuperf check`, `sweep` and `config --switches` know it without LibTorch.

#include "xpuperf/core/switch_spec.h"

namespace xpuperf::train {
namespace {

const bool channels_last_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "channels_last";
  s.type = SwitchType::Bool;
  s.default_value = "false";
  s.doc = "convolutional models' weights and batches in the channels-last memory layout";
  s.in_submit_info = true;
  return s;
}());

const bool cudnn_benchmark_spec_registered = XPUPERF_SWITCH_SPEC([] {
  SwitchSpec s;
  s.key = "cudnn_benchmark";
  s.type = SwitchType::Bool;
  s.default_value = "false";
  s.doc = "let the convolution library time its algorithms on the first batches and keep the fastest (CUDA)";
  return s;
}());

}  // namespace
}  // namespace xpuperf::train
