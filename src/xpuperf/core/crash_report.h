#pragma once
// A process that crashes (segmentation fault, bus error, illegal instruction, floating-point
// trap) says so on stderr with the call stack before it dies, so a crashed rank's log
// tells where, even on a machine without a debugger. Then the signal's default action runs
// (a core file where enabled, and the exit status a launcher reads).

namespace xpuperf {

void install_crash_report();

}  // namespace xpuperf
