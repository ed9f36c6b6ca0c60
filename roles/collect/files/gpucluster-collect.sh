#!/usr/bin/env bash
# gpucluster-collect.sh — run one stage's tools on one node, each under a timeout, and print every
# output between markers so the controller can split them apart: one task per node per stage.
#
# usage: gpucluster-collect.sh @tool NAME TIMEOUT_S CMD [ARG...] [@tool ...] [@sleep SECONDS ...]
# Arguments arrive already split and quoted by the playbook; nothing here is eval'ed.
# Output:  ==> gpucluster-begin NAME <==  ...stdout+stderr...  ==> gpucluster-end NAME rc=N seconds=S <==
# rc 124 or 137: the tool hit its timeout; rc 127: the tool is not installed.
set -u

# Microseconds since the epoch. bash 5's $EPOCHREALTIME costs no process (date and awk per tool
# were most of this script's own time); date where bash is older.
now_us() {
    if [ -n "${EPOCHREALTIME:-}" ]; then
        local t=${EPOCHREALTIME/[.,]/}
        echo $((10#$t))
    else
        echo $(($(date +%s%N) / 1000))
    fi
}

seconds_since() {
    local us=$(($(now_us) - $1))
    printf '%d.%03d' $((us / 1000000)) $((us % 1000000 / 1000))
}

run_tool() {
    local name=$1 limit=$2 start rc
    shift 2
    echo "==> gpucluster-begin $name <=="
    start=$(now_us)
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "gpucluster-collect: $1: command not found"
        rc=127
    else
        # -k: a tool that ignores SIGTERM is killed 5 s later; stdin closed so nothing waits on it.
        timeout -k 5 "$limit" "$@" </dev/null 2>&1
        rc=$?
    fi
    echo
    echo "==> gpucluster-end $name rc=$rc seconds=$(seconds_since "$start") <=="
}

if [ "$#" -eq 0 ]; then
    echo "usage: $0 @tool NAME TIMEOUT CMD [ARG...] ..." >&2
    exit 2
fi
args=("$@")
i=0
while [ "$i" -lt "${#args[@]}" ]; do
    case "${args[i]}" in
        @sleep)
            sleep "${args[i + 1]}"
            i=$((i + 2))
            ;;
        @tool)
            j=$((i + 3))
            while [ "$j" -lt "${#args[@]}" ] && [ "${args[j]}" != @tool ] && [ "${args[j]}" != @sleep ]; do
                j=$((j + 1))
            done
            run_tool "${args[@]:i+1:j-i-1}"
            i=$j
            ;;
        *)
            echo "gpucluster-collect: expected @tool or @sleep, got '${args[i]}'" >&2
            exit 2
            ;;
    esac
done
