#pragma once
// The sim vendor's collective backend, "sim": host copies through a Gloo group.

#include <memory>

#include "xpuperf/torchrt/collective_group.h"

namespace xpuperf::sim {

std::shared_ptr<torchrt::CollectiveGroup> make_collectives(const torchrt::CollectiveContext& context);

}  // namespace xpuperf::sim
