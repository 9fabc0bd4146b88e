#!/usr/bin/env bash
# Lists the `package` declarations of the core, RunLoopKit, that other modules use: the seam the core opens to its
# products, tools and check executables beyond its public API (Docs/Internals.md, "Modules and layers").
#
#   scripts/check/package-surface.sh           writes the list to Docs/PackageSurface.txt
#   scripts/check/package-surface.sh --check   fails, showing the difference, when Docs/PackageSurface.txt is stale (CI)
#
# How: `swift build` (debug, the default scratch path); the core's `package` declarations from its symbol graph
# (swift-symbolgraph-extract -minimum-access-level package, on the built module); then each other module's sources
# type-checked again with its own compiler arguments (from .build/debug.yaml) and `-dump-ast`, whose references
# name the declaration they resolve to, with its file and line: an overload, an initialiser or a member of the same
# name elsewhere is told apart by the compiler (types and enum cases, which the dump names without a place, are
# matched by their full name in the types it resolved). A declaration is listed once per module that
# refers to it; those no other module refers to are listed last, under "(no other module)": `internal` would do.
# RunLoopKitTests is left out (it imports the core with @testable and reaches internals anyway).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

LIST=Docs/PackageSurface.txt
CORE=RunLoopKit
CONSUMERS=(RunLoopKitServices RunLoopKitGLib RunLoopKitFoundation RunLoopKitAsyncMain loop-demo loop-bench loop-soak
    CheckSupport main-loop-check async-main-check glib-check foundation-check socket-activation-check)

mode=write
case "${1:-}" in
    "") ;;
    --check) mode=check ;;
    -h | --help)
        sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: scripts/check/package-surface.sh [--check]" >&2
        exit 2
        ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

swift build >"$work/build.log" 2>&1 || {
    cat "$work/build.log" >&2
    echo "package-surface.sh: swift build failed" >&2
    exit 1
}

python3 - "$CORE" "$work" "$PWD" "${CONSUMERS[@]}" >"$work/list.txt" <<'PY'
import json, os, re, subprocess, sys

core, work, root, consumers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
manifest = open(".build/debug.yaml").read()


def compiler_arguments(module):
    """The swiftc arguments SwiftPM builds `module` with, as a type-check of its sources that writes nothing."""
    found = re.search(r'^  "C\.%s-[^"]*-debug\.module":\n(?:    .*\n)*?    args: (\[.*\])$' % re.escape(module),
                      manifest, re.M)
    if not found:
        sys.exit(f"package-surface.sh: no compile command for {module} in .build/debug.yaml")
    takes_value = {"-emit-module-path", "-output-file-map", "-index-store-path", "-emit-objc-header-path", "-o",
                   "-emit-dependencies-path"}
    dropped = {"-emit-dependencies", "-emit-module", "-incremental", "-c", "-enable-batch-mode",
               "-serialize-diagnostics", "-parseable-output", "-emit-objc-header", "-emit-executable",
               "-whole-module-optimization"}
    arguments, skip = [], False
    for argument in json.loads(found.group(1)):
        if skip:
            skip = False
        elif argument in takes_value:
            skip = True
        elif argument not in dropped and not re.fullmatch(r"-j\d+", argument):
            arguments.append(argument)
    return arguments


# The core's package declarations, keyed by (file, line) of their name.
core_arguments = compiler_arguments(core)
module_path = core_arguments[core_arguments.index("-I") + 1]
clang = [a for i, a in enumerate(core_arguments) if a == "-Xcc" or (i and core_arguments[i - 1] == "-Xcc")]
graphs = os.path.join(work, "graphs")
os.makedirs(graphs)
subprocess.run(["swift-symbolgraph-extract", "-module-name", core, "-I", module_path, "-target",
                core_arguments[core_arguments.index("-target") + 1], "-minimum-access-level", "package",
                "-output-dir", graphs] + clang, check=True)
declarations = {}
for symbol in json.load(open(os.path.join(graphs, f"{core}.symbols.json")))["symbols"]:
    location = symbol.get("location")
    if symbol["accessLevel"] != "package" or not location:
        continue
    path = location["uri"].removeprefix("file://")
    kind = symbol["kind"]["identifier"].removeprefix("swift.")
    name = ".".join(symbol["pathComponents"])
    declarations[(path, location["position"]["line"] + 1)] = (
        f"{kind} {name}", os.path.relpath(path, root), re.sub(r"\(.*", "", name), kind)

# Each consumer's uses, in its type-checked AST: a reference to a function, property or initialiser names the
# declaration with its place (`decl="RunLoopKit.(file).Loop.f()@/path/File.swift:48:18"`, `bind="…@…"`); a type or
# an enum case is named by the types the compiler resolved (`type="LoopWaiter<ChildExitStatus>"`,
# `element="LoopBridgeSlots<GLibDriver>.Claim.made"`), so those are matched by their full name (generic arguments
# dropped); a type is also used where a member of it is.
reference = re.compile(r'%s\.\([^)]*\)[^"@]*@(/[^":]+\.swift):(\d+):\d+' % re.escape(core))
named = re.compile(r'(?:type|typerepr|interface_type|element)="([^"]*)"')
named_kinds = {"class", "struct", "enum", "protocol", "typealias", "enum.case"}
rows, used = set(), set()
for module in consumers:
    run = subprocess.run(compiler_arguments(module) + ["-dump-ast"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stderr[-4000:])
        sys.exit(f"package-surface.sh: type-checking {module} failed")
    ast = run.stderr + run.stdout
    found = {(path, int(line)) for path, line in reference.findall(ast)} & declarations.keys()
    types = set()
    for name in set(named.findall(ast)):
        while (plain := re.sub(r"<[^<>]*>", "", name)) != name:
            name = plain
        types.add(name)
    types = "\n".join(types)
    for key, (declaration, _, path, kind) in declarations.items():
        if kind in named_kinds and re.search(r"(?<![\w.])%s(?!\w)" % re.escape(path), types):
            found.add(key)
    for key in list(found):  # The types holding a used member.
        for other, (_, _, path, kind) in declarations.items():
            if kind in named_kinds and declarations[key][2].startswith(path + "."):
                found.add(other)
    for key in found:
        rows.add((module, declarations[key][0], declarations[key][1]))
    used |= found

print("# The core's (RunLoopKit's) `package` declarations other modules use: module, declaration, file.")
print("# Generated by scripts/check/package-surface.sh from the compiler's symbol graph and type-checked ASTs; CI checks it")
print("# is current (scripts/check/package-surface.sh --check). Do not edit: run scripts/check/package-surface.sh.")
for module in consumers:
    mine = sorted((file, declaration) for m, declaration, file in rows if m == module)
    if mine:
        print(f"\n# {module}: {len(mine)}")
        for file, declaration in mine:
            print(f"{module}\t{declaration}\t{file}")
unused = sorted((file, declaration) for key, (declaration, file, _, _) in declarations.items() if key not in used)
if unused:
    print(f"\n# (no other module): {len(unused)}")
    for file, declaration in unused:
        print(f"(no other module)\t{declaration}\t{file}")
PY

if [[ "$mode" == check ]]; then
    if ! diff -u "$LIST" "$work/list.txt" >"$work/diff.txt"; then
        cat "$work/diff.txt" >&2
        echo "package-surface.sh: $LIST is stale (the diff above turns it into what the sources say);" \
            "run scripts/check/package-surface.sh and commit the list" >&2
        exit 1
    fi
    echo "package-surface.sh: $LIST is current"
else
    cp "$work/list.txt" "$LIST"
    echo "package-surface.sh: wrote $LIST"
fi
