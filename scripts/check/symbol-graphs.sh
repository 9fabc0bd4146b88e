#!/usr/bin/env bash
# Builds the public symbol graphs of library modules, for scripts/check/docs.sh and scripts/check/public-api.sh.
# With extension blocks (-emit-extension-block-symbols): DocC shows a module's extensions of another module's types
# (RunLoopKitGLib's `Loop.attachToGLib`) only from those.
#
#   scripts/check/symbol-graphs.sh SCRATCH MODULE...   graphs into SCRATCH/symbol-graphs/ (SCRATCH is a --scratch-path)
#
# The compiler writes a module's graph whenever it (re)builds the module, as a whole, so the graphs stay current
# across incremental builds; an up-to-date build writes nothing and the last graph stands. If a graph is missing while
# the build is current (its folder was deleted), the scratch path starts afresh. A failed build prints its log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
(( $# >= 2 )) || { echo "usage: scripts/check/symbol-graphs.sh SCRATCH MODULE..." >&2; exit 2; }
scratch=$1
shift
graphs=$scratch/symbol-graphs

build_all() {
    mkdir -p "$graphs"
    local module
    for module in "$@"; do
        swift build --target "$module" --scratch-path "$scratch" \
            -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs" \
            -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public -Xswiftc -emit-extension-block-symbols \
            >"$scratch/build-$module.log" 2>&1 || {
            cat "$scratch/build-$module.log" >&2
            echo "symbol-graphs.sh: swift build --target $module failed (log: $scratch/build-$module.log)" >&2
            exit 1
        }
    done
}

build_all "$@"
for module in "$@"; do
    if [[ ! -f "$graphs/$module.symbols.json" ]]; then
        rm -rf "$scratch"
        build_all "$@"
        break
    fi
done
for module in "$@"; do
    [[ -f "$graphs/$module.symbols.json" ]] || {
        echo "symbol-graphs.sh: the build wrote no symbol graph at $graphs/$module.symbols.json" >&2
        exit 1
    }
done
