#!/usr/bin/env bash
# The layering check (cmake/layering_check.cmake): this build's targets pass it, and on a small tree
# of its own it refuses each way of crossing the layers with the file, line and what to do:
# an include of a library the target does not link (from a source or from a header beside it),
# a link to a library none of its files includes, an executable or a plug-in reaching past what it
# (or the binary that loads it) links; and it accepts what is right.
# Usage: layering_test.sh BUILD_DIR
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: layering_test.sh BUILD_DIR}
check=$root/cmake/layering_check.cmake
status=0

if ! out=$(cmake -DMANIFEST="$build/layering_manifest.cmake" -P "$check" 2>&1); then
  echo "FAILED: this build's targets cross the layers:" >&2
  echo "$out" >&2
  status=1
fi

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/src/xpuperf/low" "$tree/src/xpuperf/high" "$tree/src/xpuperf/top" "$tree/app" "$tree/vendors/v"
echo '#pragma once' >"$tree/src/xpuperf/low/low.h"
echo '#include "xpuperf/low/low.h"' >"$tree/src/xpuperf/low/low.cpp"
echo '#pragma once' >"$tree/src/xpuperf/top/top.h"
echo '#include "xpuperf/top/top.h"' >"$tree/src/xpuperf/top/top.cpp"

# write_tree HIGH_CPP_INCLUDES HIGH_H_INCLUDES HIGH_LINKS HIGH_FOR_OBJECTS APP_INCLUDES PLUGIN_INCLUDES
#            [VENDOR_H_INCLUDES]: vend, a vendor's library linking low, whose source includes the
#            header beside it
write_tree() {
  printf '#include "vendors/v/v.h"\n' >"$tree/vendors/v/v.cpp"
  printf '#pragma once\n%b%b' '#include "xpuperf/low/low.h"\n' "${7:-}" >"$tree/vendors/v/v.h"
  printf '#include "xpuperf/high/high.h"\n%b' "$1" >"$tree/src/xpuperf/high/high.cpp"
  printf '#pragma once\n%b' "$2" >"$tree/src/xpuperf/high/high.h"
  printf '%b' "$5" >"$tree/app/main.cpp"
  printf '%b' "$6" >"$tree/app/plugin.cpp"
  cat >"$tree/manifest.cmake" <<EOF
set(LAYER_ROOT "$tree")
set(LAYER_TARGETS "low;top;high;app;plugin;vend")
set(LAYER_KIND_low STATIC_LIBRARY)
set(LAYER_SOURCES_low "src/xpuperf/low/low.cpp")
set(LAYER_KIND_top STATIC_LIBRARY)
set(LAYER_SOURCES_top "src/xpuperf/top/top.cpp")
set(LAYER_KIND_high OBJECT_LIBRARY)
set(LAYER_SOURCES_high "src/xpuperf/high/high.cpp")
set(LAYER_LINKS_high "$3")
set(LAYER_LINKED_FOR_OBJECTS_high "$4")
set(LAYER_KIND_app EXECUTABLE)
set(LAYER_SOURCES_app "app/main.cpp")
set(LAYER_LINKS_app "high")
set(LAYER_KIND_plugin MODULE_LIBRARY)
set(LAYER_SOURCES_plugin "app/plugin.cpp")
set(LAYER_LOADED_INTO_plugin "app")
set(LAYER_KIND_vend OBJECT_LIBRARY)
set(LAYER_SOURCES_vend "vendors/v/v.cpp")
set(LAYER_LINKS_vend "low")
EOF
}

# expect NAME pass|fail [TEXT]: the check on the tree passes, or fails saying TEXT.
expect() {
  local name=$1 want=$2 text=${3:-}
  local out rc
  out=$(cmake -DMANIFEST="$tree/manifest.cmake" -P "$check" 2>&1)
  rc=$?
  if [[ $want == pass && $rc -ne 0 ]]; then
    echo "FAILED: $name: the check refused a right tree:" >&2
    echo "$out" >&2
    status=1
  elif [[ $want == fail && $rc -eq 0 ]]; then
    echo "FAILED: $name: the check passed a crossed tree" >&2
    status=1
  elif [[ $want == fail ]] && ! grep -qF -- "$text" <<<"$(tr -s ' \n' ' ' <<<"$out")"; then
    echo "FAILED: $name: the refusal does not say '$text':" >&2
    echo "$out" >&2
    status=1
  fi
}

low='#include "xpuperf/low/low.h"\n'
top='#include "xpuperf/top/top.h"\n'
write_tree "$low" "" "low" "" "$low" "$low"
expect "a library including what it links, an executable and a plug-in what they reach" pass
write_tree "$low\n$top" "" "low" "" "" ""
expect "a stray include in a source" fail \
  "src/xpuperf/high/high.cpp:4: includes xpuperf/top/top.h, which is top's, but high does not link top: link it in high's target_link_libraries"
write_tree "$low" "$top" "low" "" "" ""
expect "a stray include in the header beside a source" fail \
  "src/xpuperf/high/high.h:2: includes xpuperf/top/top.h, which is top's, but high does not link top"
write_tree "$low" "" "low;top" "" "" ""
expect "a link without an include" fail "high links top, but none of its files includes a header of top"
write_tree "$low" "" "low;top" "top" "" ""
expect "a link kept for an object library's registrars" pass
write_tree "$low" "" "low" "" "$top" ""
expect "an executable reaching past what it links" fail \
  "app/main.cpp:1: includes xpuperf/top/top.h, which is top's, but app does not link top"
write_tree "$low" "" "low" "" "" "$top"
expect "a plug-in reaching past what its binary links" fail \
  "app/plugin.cpp:1: includes xpuperf/top/top.h, which is top's, but plugin does not link top"

write_tree "$low" "" "low" "" "" "" "$top"
expect "a stray include in the header beside a vendor's source" fail \
  "vendors/v/v.h:3: includes xpuperf/top/top.h, which is top's, but vend does not link top"

[[ $status -eq 0 ]] && echo "the layers hold, and each way of crossing them is refused"
exit $status
