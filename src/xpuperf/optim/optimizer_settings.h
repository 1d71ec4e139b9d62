#pragma once
// The optimizer's settings, read from the merged config once (read_optimizer_settings, for the
// training settings' parser); the optimizers take these, never the config.

#include <string>

#include "xpuperf/core/config.h"

namespace xpuperf::optim {

struct OptimizerSettings {
  std::string name = "sgd";  // sgd, adam, adamw
  double lr = 0, weight_decay = 0, momentum = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool weight_decay_skip_1d = false;   // biases and normalisation weights (1-D) without weight decay
  std::string implementation = "off";  // fused_optimizer: off (or false), foreach, fused (or true)
  bool bf16_weights = false;           // the products' weights in bf16, fp32 masters here
  bool offload = false;                // offload_optimizer: the state and the update on the host
  bool offload_overlap = false;        // that update beside the next step
  // The gradients go to the host as the backward makes them: offload_stream_gradients, where the
  // step neither unscales them after the backward (fp16) nor replays a graph that runs no hooks.
  bool offload_streams = true;
  bool device_bf16 = false;  // precision: bf16 (the device keeps bf16 weights under the offload)
  // Where each value came from, for the refusals that can only be made once the device is known.
  Source implementation_source, bf16_weights_source, offload_source;
};

// ConfigError naming the line of an optimizer that is not sgd, adam or adamw.
OptimizerSettings read_optimizer_settings(const Config& cfg);

}  // namespace xpuperf::optim
