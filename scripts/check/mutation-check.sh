#!/usr/bin/env bash
# Mutation check: makes each one-line change of scripts/check/mutation-check/mutations.txt in turn to a copy of the package,
# builds it, runs the tests the entry names, and reports the changes the tests did not catch (Docs/Reliability.md,
# "Mutation check"). The list's rule: when a defect is fixed, add the change that brings it back.
#
# Usage: scripts/check/mutation-check.sh [--list FILE] [--report FILE] [ID...]
#   ID...      only these entries of the list (default: all)
#   --list     the list of mutations (default: scripts/check/mutation-check/mutations.txt)
#   --report   also write the report to FILE (the summary and one line per mutation)
#
# Exit status: 0 when the untouched copy passes every entry's tests and every mutation is caught; 1 when a mutation
# survived, when an entry no longer applies (its `from` text is in no line of its file, or in several: the code
# changed, so update the entry), when a mutated copy does not build (fix the entry's `to`), or when an entry's filter
# selects no test; 2 for a usage error or when the untouched copy fails the tests (nothing can be judged then).
#
# The copy is the working tree's files (tracked and untracked, not ignored; uncommitted changes included) under
# $MUTATION_CHECK_DIR (default .build/mutation-check/package), kept between runs with its own .build, so a rerun
# builds incrementally. Each mutation: change the line, `swift build --build-tests`, run the entry's tests (the test
# bundle with `--filter`, killed after $MUTATION_CHECK_TEST_TIMEOUT seconds, default 300: a hang counts as caught, and
# is reported as such; a filter that selects no test fails the check), put the file back.
#
# Time, on the 2-CPU development machine while other builds ran (2026-12-07, 24 mutations): 593 s from a fresh copy,
# 315 s of it the copy's full build and the baseline tests, then 4-35 s a mutation (an incremental build, its tests);
# 262 s on a rerun that keeps the copy's .build. A CI run starts from a fresh copy, over the 8 minutes a step of
# .ci/run may take: so it is not a CI step. Run it by hand before a release and after a change to a listed line or to
# the tests that catch it, and keep its report: scripts/check/mutation-check.sh --report Docs/mutation-report.txt.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."  # The repository root: every script runs from there (scripts/README.md).
ROOT=$PWD

if ! command -v swift >/dev/null 2>&1 && [[ -d /opt/swift/usr/bin ]]; then
    export PATH="/opt/swift/usr/bin:$PATH"
fi

LIST=scripts/check/mutation-check/mutations.txt
REPORT=""
ONLY=()
while (($#)); do
    case "$1" in
        --list) LIST=$2; shift 2 ;;
        --report) REPORT=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "mutation-check: unknown option $1" >&2; exit 2 ;;
        *) ONLY+=("$1"); shift ;;
    esac
done
[[ -f "$LIST" ]] || { echo "mutation-check: no list at $LIST" >&2; exit 2; }

WORK=${MUTATION_CHECK_DIR:-$ROOT/.build/mutation-check/package}
TEST_TIMEOUT=${MUTATION_CHECK_TEST_TIMEOUT:-300}
LOGS=$(dirname "$WORK")/logs
mkdir -p "$WORK" "$LOGS"

# --- The list -------------------------------------------------------------------------------------------------------

IDS=() FILES=() FROMS=() TOS=() TESTS=() WHYS=()
parse_list() {
    local id="" file="" from="" to="" tests="" why="" line key value
    flush() {
        if [[ -n "$id$file$from$to$tests$why" ]]; then
            if [[ -z "$id" || -z "$file" || -z "$from" || -z "$tests" ]]; then
                echo "mutation-check: $LIST: an entry lacks id, file, from or tests (id '${id}')" >&2
                exit 2
            fi
            IDS+=("$id") FILES+=("$file") FROMS+=("$from") TOS+=("$to") TESTS+=("$tests") WHYS+=("$why")
        fi
        id="" file="" from="" to="" tests="" why=""
    }
    while IFS= read -r line || [[ -n "$line" ]]; do
        [[ "$line" == \#* ]] && continue
        if [[ -z "${line//[[:space:]]/}" ]]; then
            flush
            continue
        fi
        key=${line%%:*}
        value=${line#*: }
        [[ "$value" == "$line" ]] && value=""  # "to:" with nothing after it
        case "$key" in
            id) id=$value ;;
            file) file=$value ;;
            from) from=$value ;;
            to) to=$value ;;
            tests) tests=$value ;;
            why) why=$value ;;
            *) echo "mutation-check: $LIST: unknown key '$key' in: $line" >&2; exit 2 ;;
        esac
    done <"$LIST"
    flush
}
parse_list

SELECTED=()
for index in "${!IDS[@]}"; do
    if ((${#ONLY[@]} == 0)); then
        SELECTED+=("$index")
        continue
    fi
    for wanted in "${ONLY[@]}"; do [[ "${IDS[$index]}" == "$wanted" ]] && SELECTED+=("$index"); done
done
((${#SELECTED[@]} > 0)) || { echo "mutation-check: no entry selected" >&2; exit 2; }

# --- The copy -------------------------------------------------------------------------------------------------------

# Brings the copy in line with the working tree: changed files copied with their times (so an incremental build
# recompiles only what changed), files gone from the tree removed from the copy.
sync_copy() {
    declare -A wanted=()
    local path
    while IFS= read -r -d '' path; do
        [[ -f "$path" ]] || continue
        wanted["$path"]=1
        if ! cmp -s "$path" "$WORK/$path"; then
            mkdir -p "$WORK/$(dirname "$path")"
            cp -p "$path" "$WORK/$path"
        fi
    done < <(git ls-files -z --cached --others --exclude-standard)
    while IFS= read -r -d '' path; do
        path=${path#./}
        [[ -n "${wanted[$path]:-}" ]] || rm -f "$WORK/$path"
    done < <(cd "$WORK" && find . -path ./.build -prune -o -type f -print0)
}

# The line numbers of `file` (in the copy) that hold `text`.
matching_lines() {
    grep -nF -- "$2" "$WORK/$1" | cut -d: -f1 || true
}

# Replaces `from` by `to` in line `number` of `file` (in the copy), byte for byte elsewhere.
replace_in_line() {
    local file=$WORK/$1 number=$2 from=$3 to=$4
    local lines=() index
    mapfile -t lines <"$file"
    index=$((number - 1))
    lines[index]=${lines[index]/"$from"/"$to"}
    printf '%s\n' "${lines[@]}" >"$file.mutated"
    mv "$file.mutated" "$file"
}

build() {  # build LOG
    (cd "$WORK" && swift build --build-tests) >"$1" 2>&1
}

# run_tests FILTER LOG; answers the exit status: 0 passed, 69 no test matched, 124 or 137 killed at the time limit.
# The test bundle is run directly rather than through `swift test`, which starts it in a process group of its own that
# `timeout` would not end: here the bundle and the check executables it spawns are all in timeout's group.
run_tests() {
    local status=0
    (cd "$WORK" && NO_COLOR=1 timeout -k 10 "$TEST_TIMEOUT" \
        .build/debug/RunLoopKitPackageTests.xctest --testing-library swift-testing --filter "$1") >"$2" 2>&1 \
        || status=$?
    return "$status"
}

# --- The run --------------------------------------------------------------------------------------------------------

# An interrupted run puts the mutated file back (the next run's sync would too).
MUTATED=""
trap '[[ -n "$MUTATED" ]] && cp "$LOGS/original" "$MUTATED"' EXIT

START=$SECONDS
RESULTS=()
FAILED=0
note() {
    RESULTS+=("$1")
    echo "$1"
}

echo "==> mutation check: ${#SELECTED[@]} mutations from $LIST, in $WORK"
sync_copy

# The untouched copy must build and pass every selected entry's tests: a mutation is judged caught only against it.
ALL_TESTS=$(for index in "${SELECTED[@]}"; do echo "${TESTS[$index]}"; done | sort -u | paste -sd '|')
echo "==> baseline: build and run the selected tests on the untouched copy"
if ! build "$LOGS/baseline-build.log"; then
    echo "mutation-check: the untouched copy does not build (log: $LOGS/baseline-build.log)" >&2
    exit 2
fi
baseline_status=0
run_tests "$ALL_TESTS" "$LOGS/baseline-test.log" || baseline_status=$?
if ((baseline_status == 69)); then
    echo "mutation-check: the selected entries' filters select no test ('$ALL_TESTS')" >&2
    exit 1
elif ((baseline_status != 0)); then
    echo "mutation-check: the untouched copy fails the tests (log: $LOGS/baseline-test.log); nothing to judge" >&2
    exit 2
fi
BASELINE=$((SECONDS - START))
echo "==> baseline: ok (${BASELINE}s)"

for index in "${SELECTED[@]}"; do
    id=${IDS[$index]} file=${FILES[$index]} from=${FROMS[$index]} to=${TOS[$index]} tests=${TESTS[$index]}
    step_start=$SECONDS
    if [[ ! -f "$WORK/$file" ]]; then
        note "NO LONGER APPLIES  $id: $file does not exist"
        FAILED=1
        continue
    fi
    mapfile -t found < <(matching_lines "$file" "$from")
    if ((${#found[@]} != 1)); then
        if ((${#found[@]} == 0)); then where="in no line"; else where="in ${#found[@]} lines (${found[*]})"; fi
        note "NO LONGER APPLIES  $id: '$from' is $where of $file: update the entry"
        FAILED=1
        continue
    fi
    cp -p "$WORK/$file" "$LOGS/original"
    MUTATED=$WORK/$file
    replace_in_line "$file" "${found[0]}" "$from" "$to"
    log="$LOGS/$id"
    if ! build "$log-build.log"; then
        verdict="DOES NOT BUILD    $id: $file:${found[0]} (log: $log-build.log): fix the entry's 'to'"
        FAILED=1
    else
        status=0
        run_tests "$tests" "$log-test.log" || status=$?
        if ((status == 0)); then
            verdict="SURVIVED          $id: $file:${found[0]}, tests '$tests' pass: ${WHYS[$index]}"
            FAILED=1
        elif ((status == 69)); then
            verdict="NO TESTS MATCH    $id: the filter '$tests' selects no test: fix the entry's 'tests'"
            FAILED=1
        elif ((status == 124 || status == 137)); then
            verdict="caught (hang)     $id: tests '$tests' still running after ${TEST_TIMEOUT}s"
        else
            verdict="caught            $id: tests '$tests' fail"
        fi
    fi
    cp "$LOGS/original" "$WORK/$file"  # A new time: the next build recompiles it as it was.
    MUTATED=""
    note "$verdict ($((SECONDS - step_start))s)"
done

TOTAL=$((SECONDS - START))
caught=$(printf '%s\n' "${RESULTS[@]}" | grep -c '^caught' || true)
SUMMARY="mutation check: $caught of ${#SELECTED[@]} mutations caught in ${TOTAL}s (baseline ${BASELINE}s), $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- || echo '+changes')"
echo "==> $SUMMARY"
if [[ -n "$REPORT" ]]; then
    {
        echo "$SUMMARY"
        echo "list: $LIST; machine: $(nproc) CPUs; logs: ${LOGS#"$ROOT"/}"
        printf '%s\n' "${RESULTS[@]}"
    } >"$REPORT"
fi
exit "$FAILED"
