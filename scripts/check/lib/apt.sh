# Sourced, not run: `source scripts/check/lib/apt.sh` (from the repository root, or by a path relative to the script).
# One way for every script to install Debian's packages it needs, so CI's clean machine and a contributor's get them
# the same way.

# apt_install PACKAGE... : installs Debian's packages quietly, as root or else through sudo; does nothing without
# apt-get (the caller then finds the tool missing and says so). Output is shown only when the install fails.
apt_install() {
    command -v apt-get >/dev/null 2>&1 || return 0
    local log
    log=$(mktemp)
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@") >"$log" 2>&1 \
        || (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@") >>"$log" 2>&1; then
        rm -f "$log"
        return 0
    fi
    echo "apt_install: could not install $*:" >&2
    cat "$log" >&2
    rm -f "$log"
    return 1
}
