#!/usr/bin/env bash
# Compares the public API of every library product with the recorded baseline, with the toolchain's
# `swift package diagnose-api-breaking-changes` (swift-api-digester), and prints what would break a dependent.
#
#   scripts/check/api-breaks.sh            the report; exit status by the baseline's version (below)
#   scripts/check/api-breaks.sh --strict   fail on any break whatever the version (to try the gate)
#   scripts/check/api-breaks.sh --help     this text
#
# The baseline is scripts/check/api-baseline.txt: `version` (the release it is, or `none`) and `commit` (its hash).
# Before 1.0.0 a break is reported and the script exits 0: the changelog's Unreleased section says how to update.
# From 1.0.0 on a break fails (exit 1) unless its exact message is in scripts/check/api-breakage-allowlist.txt.
# The API is the products' `public` symbols: a break of a `package` declaration (Docs/PackageSurface.txt) is shown
# as not API and not counted; a `public` declaration made `package` counts as removed.
#
# The working tree builds in .build/, as `swift build` does (after it, as in .ci/run, nothing is left to build); the
# baseline in a checkout of its commit, with a scratch path of its own, under .build/<triple>/apidiff/. Its digests
# are kept in .build-api/baselines/<commit>/ (git-ignored), so it builds once: about 70 s then on the 2-CPU VM, 2.5
# minutes with the tree's own debug build too, 5 to 15 s once both are current. The full output is in
# .build-api/api-breaks.log.
#
# A clone without the baseline's commit (a shallow CI clone) fetches it from `origin`, and tags it `api-baseline`
# (a local tag) when no branch or tag contains it; when the fetch fails, the check says so and is skipped (exit 0
# before 1.0.0; exit 1 from then on, since the gate cannot be checked).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).

strict=0
case "${1:-}" in
    "") ;;
    --strict) strict=1 ;;
    -h | --help)
        sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: scripts/check/api-breaks.sh [--strict]" >&2
        exit 2
        ;;
esac

if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

BASELINE_FILE=scripts/check/api-baseline.txt
ALLOWLIST=scripts/check/api-breakage-allowlist.txt
SCRATCH=.build-api  # the baseline's digests, the log
LOG=$SCRATCH/api-breaks.log
START=$SECONDS

# The one place the version is read from: the baseline file's `version:` line.
field() { sed -n "s/^$1:[[:space:]]*\([^[:space:]]*\).*/\1/p" "$BASELINE_FILE" | head -n 1; }
version=$(field version)
commit=$(field commit)
if [[ -z "$version" || ! "$commit" =~ ^[0-9a-f]{40}$ ]]; then
    echo "api-breaks.sh: $BASELINE_FILE needs a 'version:' line and a 'commit:' line with a full 40-digit hash" >&2
    exit 2
fi

# Gate from 1.0.0 on (or with --strict); a report before.
gate=$strict
if [[ "$version" =~ ^([0-9]+)\.[0-9]+\.[0-9]+ ]] && (( BASH_REMATCH[1] >= 1 )); then
    gate=1
elif [[ "$version" != none && ! "$version" =~ ^0\.[0-9]+\.[0-9]+ ]]; then
    echo "api-breaks.sh: $BASELINE_FILE: version '$version' is neither 'none' nor a semantic version" >&2
    exit 2
fi
if [[ "$version" == none ]]; then
    against="commit ${commit:0:10} (no release yet)"
else
    against="$version (commit ${commit:0:10})"
    # The released version has its changelog section (scripts/README.md, "Releasing").
    grep -qE "^## \[?${version//./\\.}\]?([^0-9.]|$)" CHANGELOG.md \
        || echo "api-breaks.sh: warning: CHANGELOG.md has no '## $version' section for the baseline's version" >&2
fi
if (( gate )); then mode="a gate: a break not in $ALLOWLIST fails"; else mode="a report: breaks do not fail before 1.0.0"; fi
echo "api-breaks.sh: the public API against $against; $mode"

# skip REASON : the baseline cannot be compared with. Not a failure before 1.0.0; a failure of the gate after.
skip() {
    echo "api-breaks.sh: SKIPPED, $1" >&2
    if (( gate )); then
        echo "api-breaks.sh: the API gate could not run, so it fails" >&2
        exit 1
    fi
    exit 0
}

mkdir -p "$SCRATCH/baselines"
command -v git >/dev/null 2>&1 || skip "git is not installed"
git rev-parse --git-dir >/dev/null 2>&1 || skip "not a git checkout (the baseline is a commit)"
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    # A shallow clone (CI's usual `--depth 1`) lacks it: fetch that one commit (hosts such as GitHub serve a commit by
    # its hash), with its history only as deep as the clone's own.
    depth=()
    [[ "$(git rev-parse --is-shallow-repository 2>/dev/null)" == true ]] && depth=(--depth 1)
    echo "api-breaks.sh: the baseline commit ${commit:0:10} is not in this clone; fetching it from origin"
    if ! git fetch --quiet --no-tags "${depth[@]}" origin "$commit" >"$SCRATCH/fetch.log" 2>&1 \
        || ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
        sed 's/^/    /' "$SCRATCH/fetch.log" >&2 || true
        rm -f "$SCRATCH/fetch.log"
        skip "the baseline commit $commit is not in this clone and could not be fetched from origin (git fetch origin $commit)"
    fi
    rm -f "$SCRATCH/fetch.log"
fi
# SwiftPM builds the baseline in a `git clone` of this repository, which copies branches and tags only: a commit no
# branch or tag contains (the one just fetched, or one on `origin/main` alone) gets the local tag `api-baseline`.
if [[ -z "$(git for-each-ref --contains "$commit" --count 1 refs/heads refs/tags)" ]]; then
    echo "api-breaks.sh: no branch or tag contains ${commit:0:10}: tagging it api-baseline (local) for SwiftPM's clone"
    git tag -f api-baseline "$commit" >/dev/null
fi

allowlist=()
[[ -f "$ALLOWLIST" ]] && allowlist=(--breakage-allowlist-path "$PWD/$ALLOWLIST")

set +e
swift package --scratch-path .build diagnose-api-breaking-changes "$commit" \
    --baseline-dir "$PWD/$SCRATCH/baselines" "${allowlist[@]}" >"$LOG" 2>&1
status=$?
set -e

# The verdict lines per module, without the builds' progress. swift-api-digester compares `package` declarations as
# well as `public` ones (it marks them "isInternal" in the baseline's digest), so a break of one is printed as not
# API and not counted. It also misses a `public` declaration made `package` (to it the declaration is still there):
# the working tree's symbol graphs (swift-symbolgraph-extract on the modules just built, at `package` level) show
# those, matched to the baseline's public declarations by USR.
report=$(python3 - "$LOG" "$SCRATCH/baselines/$commit" .build/debug.yaml "$ALLOWLIST" <<'PY'
import glob, json, os, re, subprocess, sys, tempfile
log, digests, manifest = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
allowed = set(open(sys.argv[4]).read().splitlines()) if os.path.exists(sys.argv[4]) else set()
types = ("Root", "Import", "TypeNominal", "TypeNameAlias", "TypeFunc")
package, public = set(), {}  # the baseline's declarations: "Type.member()" paths of package ones; public ones by USR
def walk(node, path, internal, module):
    name = node.get("printedName")
    here = path + [name] if name and node.get("kind") not in types else path
    internal = internal or node.get("isInternal", False)
    if internal and here:
        package.add(".".join(here))
    elif node.get("usr") and node.get("kind") not in types:
        public.setdefault(module, {})[node["usr"]] = (node.get("declKind", node["kind"]).lower(), ".".join(here))
    for child in node.get("children", []) + node.get("accessors", []):
        if child.get("kind") not in types[2:]:
            walk(child, here, internal, module)
for file in sorted(glob.glob(digests + "/*.json")):
    walk(json.load(open(file))["ABIRoot"], [], False, os.path.basename(file)[:-5])
for line in open(log, encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    m = re.search(r"API breakage: \S+ (.+?) (has|is|now|was|changes|conforms|adds|removes)\b", line)
    if m and m.group(1) in package:
        print(line + "   [a `package` declaration: not API, not counted]")
    elif m or re.search(r"breaking change|ABI breakage|error:", line):
        print(line)
for module, declarations in public.items():
    found = re.search(r"description: \"Compiling Swift Module '%s' .*?\n\s+args: (\[.*\])$" % re.escape(module),
                      manifest, re.M)
    if not found:
        print(f"api-breaks.sh: warning: {module} was not built; public declarations made package not checked")
        continue
    args = json.loads(found.group(1))
    clang = [a for i, a in enumerate(args) if a == "-Xcc" or (i and args[i - 1] == "-Xcc")]
    with tempfile.TemporaryDirectory() as graphs:
        subprocess.run(["swift-symbolgraph-extract", "-module-name", module, "-I",
                        os.path.dirname(args[args.index("-emit-module-path") + 1]), "-target",
                        args[args.index("-target") + 1], "-minimum-access-level", "package", "-output-dir", graphs]
                       + clang, check=True, stdout=subprocess.DEVNULL)
        access = {s["identifier"]["precise"]: s["accessLevel"]
                  for graph in glob.glob(graphs + "/*.symbols.json") for s in json.load(open(graph))["symbols"]}
    demoted = sorted(d for usr, d in declarations.items() if access.get(usr) == "package"
                     and f"API breakage: {d[0]} {d[1]} is no longer public (now package)" not in allowed)
    if demoted:
        print(f"{len(demoted)} public declaration(s) made package in {module}:")
        for kind, name in demoted:
            print(f"  💔 API breakage: {kind} {name} is no longer public (now package)")
PY
)
if [[ -n "$report" ]]; then echo "$report"; fi
breaks=$(grep -E 'API breakage|ABI breakage' <<<"$report" | grep -vc 'not API, not counted' || true)
elapsed=$((SECONDS - START))

if (( status != 0 )) && ! grep -q 'breaking changes\{0,1\} detected in' "$LOG"; then
    # Not a verdict: the tool itself failed (the baseline or the tree did not build, say).
    tail -n 40 "$LOG" >&2
    echo "api-breaks.sh: diagnose-api-breaking-changes failed (exit $status) without a verdict (log: $LOG)" >&2
    if (( gate )); then exit 1; fi
    echo "api-breaks.sh: not failing before 1.0.0" >&2
    exit 0
fi
if (( breaks == 0 )); then
    echo "api-breaks.sh: no breaking change against $against (${elapsed}s)"
    exit 0
fi
echo "api-breaks.sh: $breaks breaking change(s) against $against (${elapsed}s; log: $LOG)"
if (( gate )); then
    echo "api-breaks.sh: FAILED: from 1.0.0 a break needs a new major version, its exact message in $ALLOWLIST and" \
        "its line in CHANGELOG.md" >&2
    exit 1
fi
echo "api-breaks.sh: reported only (version $version): say in CHANGELOG.md's Unreleased section how to update"
