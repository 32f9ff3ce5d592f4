# shellcheck shell=bash
# Sourced by the stub executables of tests/scripts/test_setup_rocm.py. Each call appends one line to
# $STUB_LOG, tab-separated: tool, working directory, HIP_VISIBLE_DEVICES (or <unset>), then
# every argument, so the tests can assert on exact argv, cwd and what the environment passed on.
stub_log() {
    local tool=$1
    shift
    {
        printf '%s\t%s\t%s' "$tool" "$PWD" "${HIP_VISIBLE_DEVICES-<unset>}"
        printf '\t%s' "$@"
        printf '\n'
    } >>"$STUB_LOG"
}
