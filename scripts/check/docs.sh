#!/usr/bin/env bash
# Builds the DocC reference of the RunLoopKit libraries as static web sites, with the toolchain's own `docc`: every
# product's module (RunLoopKit, RunLoopKitServices, RunLoopKitAsyncMain, RunLoopKitGLib, RunLoopKitFoundation), each
# from its catalog, the same five that .spi.yml names for the Swift Package Index. A module's extensions of the
# core's types (`Loop.attachToGLib`, `LoopError.Code.notFound`) are on its own site, under "Extended Modules"; a
# link from one site to another module's symbol cannot resolve, so doc comments name those in code voice.
#
#   scripts/check/docs.sh          build the sites into .docs-site/<Module>/ (git-ignored); exits non-zero on any DocC
#                            warning or on a public symbol without its own doc comment (used by .ci/run)
#   scripts/check/docs.sh --help   this text
#
# Steps, for each module:
#   1. compile the module's target in its own scratch path (.build-docs/, so the main .build/ is untouched),
#      emitting its public symbol graph into .build-docs/symbol-graphs/;
#   2. check that every public symbol the module declares has a doc comment of its own;
#   3. `docc convert` the catalog Sources/<Module>/<Module>.docc with the module's symbol graph, for static hosting,
#      with --warnings-as-errors, and fail on any "warning:" line in its output as well.
#
# To read a site, serve its folder over HTTP, for instance `python3 -m http.server --directory .docs-site/RunLoopKit
# 8000`, and open http://localhost:8000/documentation/runloopkit/ (the pages load their content with JavaScript, so
# opening the files directly from disk does not work).
#
# Environment: DOCC (default: docc next to `swift`, e.g. /opt/swift/usr/bin/docc).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).

case "${1:-}" in
    "") ;;
    -h | --help)
        sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: scripts/check/docs.sh [--help]" >&2
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

MODULES=(RunLoopKit RunLoopKitServices RunLoopKitAsyncMain RunLoopKitGLib RunLoopKitFoundation)
SCRATCH=.build-docs
GRAPHS=$SCRATCH/symbol-graphs
SITE=.docs-site
START=$SECONDS

# 1. The symbol graphs (scripts/check/symbol-graphs.sh).
scripts/check/symbol-graphs.sh "$SCRATCH" "${MODULES[@]}"
echo "docs.sh: symbol graphs of ${MODULES[*]} built ($((SECONDS - START))s)"

status=0
rm -rf "$SITE"
mkdir -p "$SITE"
for module in "${MODULES[@]}"; do
    # The module's own graphs: its graph, and those of its extensions to other modules' types (Module@Other).
    own=$SCRATCH/graphs-$module
    rm -rf "$own"
    mkdir -p "$own"
    cp "$GRAPHS/$module.symbols.json" "$own/"
    for extension in "$GRAPHS/$module@"*.symbols.json; do
        [[ -f "$extension" ]] && cp "$extension" "$own/"
    done

    # 2. Every public symbol declared in the module's sources documents itself. Members the compiler synthesizes
    #    (hash(into:), the OptionSet and Equatable operations, ...) have no source location and are skipped; a
    #    declaration whose comment is missing would otherwise inherit the protocol's, which names another module.
    #    An extension of another module's type (`extension Loop`, a `swift.extension` block symbol) is no declaration
    #    of its own: its members are checked.
    undocumented=$(python3 - "$module" "$own"/*.symbols.json <<'PY'
import json, sys
module = sys.argv[1]
for file in sys.argv[2:]:
    for s in json.load(open(file))["symbols"]:
        loc, doc = s.get("location"), s.get("docComment")
        if loc and "::SYNTHESIZED::" not in s["identifier"]["precise"] and s["kind"]["identifier"] != "swift.extension" and (
                doc is None or doc.get("module", module) != module):
            path = loc["uri"].removeprefix("file://")
            print(f"{path}:{loc['position']['line'] + 1}: {'.'.join(s['pathComponents'])}")
PY
    )
    if [[ -n "$undocumented" ]]; then
        while IFS= read -r line; do echo "warning: public symbol without a doc comment: $line" >&2; done \
            <<<"$undocumented"
        echo "docs.sh: every public symbol of $module needs a doc comment (what, when, from which thread)" >&2
        exit 1
    fi

    # 3. The site. docc prints diagnostics with "warning:" or "error:"; --warnings-as-errors turns warnings into
    #    errors (and a non-zero exit), and the grep below fails on any that still gets through.
    log=$SCRATCH/docc-$module.log
    converted=0
    "$DOCC" convert "Sources/$module/$module.docc" \
        --additional-symbol-graph-dir "$own" \
        --output-path "$SITE/$module" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.runloopkit.$module" \
        --transform-for-static-hosting \
        --warnings-as-errors \
        >"$log" 2>&1 || converted=$?
    if (( converted != 0 )) || grep -qE '(^|[^a-z])(warning|error):' "$log"; then
        cat "$log" >&2
        echo "docs.sh: docc reported problems for $module (exit ${converted}; log: $log)" >&2
        status=1
    fi
done
(( status == 0 )) || exit 1

echo "docs.sh: sites built in $SITE/ ($((SECONDS - START))s): serve one, e.g."
echo "  python3 -m http.server --directory $SITE/RunLoopKit 8000   # then open http://localhost:8000/documentation/runloopkit/"
