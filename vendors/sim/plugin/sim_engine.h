#pragma once
// The sim vendor's inference engine and base-case implementation, registered by its init.

namespace xpuperf::sim {

// Registers the engine "sim"; false in a build without the inference registry.
bool register_engine();
// Registers the plug-in's own main_memory-bandwidth (backend "sim").
void register_base_cases();

}  // namespace xpuperf::sim
