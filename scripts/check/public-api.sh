#!/usr/bin/env bash
# Lists and counts the public API of each library module, from the compiler's symbol graph: every public symbol
# declared in our sources (members the compiler synthesises, which have no source location, are not counted).
#
#   scripts/check/public-api.sh            one line per module: "MODULE DECLARATIONS ENTRIES", then the totals
#   scripts/check/public-api.sh --list     every declaration: module, kind, path, source file and line
#
# DECLARATIONS counts each public declaration once. ENTRIES also counts the copies the symbol graph lists of a
# protocol extension's members on each conforming type (identifiers with `::SYNTHESIZED::`, DocC's "default
# implementations"): the same declaration, shown once per conformer.
#
# RunLoopKitSystem is no product (its few public declarations are public only so the other modules can inline
# them; see Docs/Internals.md), so it is not counted. Builds into .build-docs/ (git-ignored), with scripts/check/docs.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
MODULES=(RunLoopKit RunLoopKitServices RunLoopKitGLib RunLoopKitFoundation RunLoopKitAsyncMain)
SCRATCH=.build-docs  # Shared with scripts/check/docs.sh, which builds two of these modules.
GRAPHS=$SCRATCH/symbol-graphs
scripts/check/symbol-graphs.sh "$SCRATCH" "${MODULES[@]}"
python3 - "${1:-}" "$GRAPHS" "${MODULES[@]}" <<'PY'
import json, os, sys
mode, folder, modules = sys.argv[1], sys.argv[2], sys.argv[3:]
total = entries_total = 0
for module in modules:
    rows = []
    entries = 0
    for name in os.listdir(folder):
        # A module's own graph, and its extensions of other modules' types (Module@Other.symbols.json).
        if not (name == f"{module}.symbols.json" or name.startswith(f"{module}@")):
            continue
        for symbol in json.load(open(os.path.join(folder, name)))["symbols"]:
            location = symbol.get("location")
            # An extension of another module's type (symbol-graphs.sh emits extension blocks, for DocC) declares
            # nothing itself: its members are counted.
            if not location or symbol["kind"]["identifier"] == "swift.extension":
                continue
            entries += 1
            if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue
            path = location["uri"].split("/Sources/", 1)[-1]
            rows.append((module, symbol["kind"]["identifier"].removeprefix("swift."),
                         ".".join(symbol["pathComponents"]), f"{path}:{location['position']['line'] + 1}"))
    total += len(rows)
    entries_total += entries
    if mode == "--list":
        for row in sorted(rows, key=lambda r: (r[3], r[2])):
            print("\t".join(row))
    else:
        print(f"{module} {len(rows)} {entries}")
if mode != "--list":
    print(f"total {total} {entries_total}")
PY
