#!/usr/bin/env bash
# Builds the DocC reference of the RunLoopKit library as a static web site, with the toolchain's own `docc`.
#
#   scripts/docs.sh          build the site into .docs-site/ (git-ignored); exits non-zero on any DocC warning
#                            or on a public symbol without its own doc comment (used by .ci/run)
#   scripts/docs.sh --help   this text
#
# Steps:
#   1. compile the RunLoopKit target in its own scratch path (.build-docs/, so the main .build/ is untouched),
#      emitting the module's public symbol graph into .build-docs/symbol-graphs/;
#   2. check that every public symbol declared in Sources/RunLoopKit has a doc comment of its own;
#   3. `docc convert` the catalog Sources/RunLoopKit/RunLoopKit.docc with that symbol graph, for static hosting,
#      with --warnings-as-errors, and fail on any "warning:" line in its output as well.
#
# To read the site, serve the folder over HTTP, for instance `python3 -m http.server --directory .docs-site 8000`,
# and open http://localhost:8000/documentation/runloopkit/ (the pages load their content with JavaScript, so
# opening the files directly from disk does not work).
#
# Environment: DOCC (default: docc next to `swift`, e.g. /opt/swift/usr/bin/docc).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

case "${1:-}" in
    "") ;;
    -h | --help)
        sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: scripts/docs.sh [--help]" >&2
        exit 2
        ;;
esac

if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi
DOCC=${DOCC:-$(dirname "$(command -v swift)")/docc}
if [[ ! -x "$DOCC" ]]; then
    DOCC=$(command -v docc || true)
fi
if [[ -z "$DOCC" || ! -x "$DOCC" ]]; then
    echo "docs.sh: no docc found next to swift or on PATH (set DOCC)" >&2
    exit 1
fi

MODULE=RunLoopKit
CATALOG=Sources/RunLoopKit/RunLoopKit.docc
SCRATCH=.build-docs
GRAPHS=$SCRATCH/symbol-graphs
SITE=.docs-site
LOG=$SCRATCH/docc.log
START=$SECONDS

build_module() {
    swift build --target "$MODULE" --scratch-path "$SCRATCH" \
        -Xswiftc -emit-symbol-graph \
        -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$GRAPHS" \
        -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public \
        >"$SCRATCH/build.log" 2>&1 || {
        cat "$SCRATCH/build.log" >&2
        echo "docs.sh: swift build --target $MODULE failed (log: $SCRATCH/build.log)" >&2
        return 1
    }
}

# 1. The symbol graph. The compiler writes it whenever it (re)builds the module, as a whole, so it stays current
#    across incremental builds; an up-to-date build writes nothing and the last graph stands. If the graph is
#    missing while the build is current (its folder was deleted), start the scratch path afresh.
mkdir -p "$GRAPHS"
graph="$GRAPHS/$MODULE.symbols.json"
build_module
if [[ ! -f "$graph" ]]; then
    rm -rf "$SCRATCH"
    mkdir -p "$GRAPHS"
    build_module
fi
if [[ ! -f "$graph" ]]; then
    echo "docs.sh: the build wrote no symbol graph at $graph" >&2
    exit 1
fi
echo "docs.sh: symbol graph of $MODULE built ($((SECONDS - START))s)"

# 2. Every public symbol declared in our sources (in the module's graph, and in the graphs of its extensions to
#    other modules' types, if any) documents itself. Members the compiler synthesizes (hash(into:),
#    the OptionSet and Equatable operations, ...) have no source location and are skipped; a declaration whose
#    comment is missing would otherwise inherit the protocol's, which names another module.
undocumented_filter='.symbols[] | select(.location != null)
    | select(.docComment == null or (.docComment.module // "'"$MODULE"'") != "'"$MODULE"'")
    | "\(.location.uri | sub("^file://"; "")):\(.location.position.line + 1): \(.pathComponents | join("."))"'
if command -v jq >/dev/null 2>&1; then
    undocumented=$(jq -r "$undocumented_filter" "$GRAPHS"/*.symbols.json)
elif command -v python3 >/dev/null 2>&1; then
    undocumented=$(python3 - "$MODULE" "$GRAPHS"/*.symbols.json <<'PY'
import json, sys
module = sys.argv[1]
for file in sys.argv[2:]:
    for s in json.load(open(file))["symbols"]:
        loc, doc = s.get("location"), s.get("docComment")
        if loc and (doc is None or doc.get("module", module) != module):
            path = loc["uri"].removeprefix("file://")
            print(f"{path}:{loc['position']['line'] + 1}: {'.'.join(s['pathComponents'])}")
PY
    )
else
    echo "docs.sh: needs jq or python3 to check doc comments" >&2
    exit 1
fi
if [[ -n "$undocumented" ]]; then
    while IFS= read -r line; do echo "warning: public symbol without a doc comment: $line" >&2; done <<<"$undocumented"
    echo "docs.sh: every public symbol needs a doc comment (what, when, from which thread)" >&2
    exit 1
fi

# 3. The site. docc prints diagnostics with "warning:" or "error:"; --warnings-as-errors turns warnings into
#    errors (and a non-zero exit), and the grep below fails on any that still gets through.
rm -rf "$SITE"
status=0
"$DOCC" convert "$CATALOG" \
    --additional-symbol-graph-dir "$GRAPHS" \
    --output-path "$SITE" \
    --fallback-display-name "$MODULE" \
    --fallback-bundle-identifier org.runloopkit.RunLoopKit \
    --transform-for-static-hosting \
    --warnings-as-errors \
    >"$LOG" 2>&1 || status=$?
if (( status != 0 )) || grep -qE '(^|[^a-z])(warning|error):' "$LOG"; then
    cat "$LOG" >&2
    echo "docs.sh: docc reported problems (exit ${status}; log: $LOG)" >&2
    exit 1
fi

echo "docs.sh: site built in $SITE/ ($((SECONDS - START))s): serve it, e.g."
echo "  python3 -m http.server --directory $SITE 8000   # then open http://localhost:8000/documentation/runloopkit/"
