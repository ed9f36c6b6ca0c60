#!/usr/bin/env bash
# gpucluster-collect.sh — run one stage's tools on one node, each under a timeout, and print every
# output between markers so the controller can split them apart: one task per node per stage.
#
# usage: gpucluster-collect.sh @tool NAME TIMEOUT_S CMD [ARG...] [@tool ...] [@sleep SECONDS ...]
# Arguments arrive already split and quoted by the playbook; nothing here is eval'ed.
# Output:  ==> gpucluster-begin NAME <==  ...stdout+stderr...  ==> gpucluster-end NAME rc=N seconds=S <==
# rc 124 or 137: the tool hit its timeout; rc 127: the tool is not installed; rc 143: the
# collector was stopped (the task's timeout, Ctrl-C, the controller or its connection went away).
#
# Each tool runs under coreutils timeout, which makes itself the leader of a process group of its
# own: on a timeout the whole group is killed, and so is it when the collector is stopped (trap)
# or killed outright, by a watchdog in its own session that watches the collector and the
# processes above it (the shell, sudo, sshd's session or the Ansible worker): when any of them is
# gone, nobody will read the tool's output, and the tool's group is killed.
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

# The running tool's process group (timeout's pid), also in a file for the watchdog.
tool_pgid=
state_dir=
current=
started=

kill_tool() {
    if [ -n "$tool_pgid" ]; then
        kill -TERM -- "-$tool_pgid" 2>/dev/null
        # a tool that ignores SIGTERM gets SIGKILL, as timeout -k does
        local i=0
        while [ "$i" -lt 50 ] && kill -0 -- "-$tool_pgid" 2>/dev/null; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -KILL -- "-$tool_pgid" 2>/dev/null
        tool_pgid=
    fi
}

stopped() {
    kill_tool
    if [ -n "$current" ]; then
        echo
        echo "==> gpucluster-end $current rc=143 seconds=$(seconds_since "$started") <=="
    fi
    finish
    exit 143
}

finish() {
    if [ -n "${watchdog_pid:-}" ]; then
        kill "$watchdog_pid" 2>/dev/null
    fi
    if [ -n "$state_dir" ]; then
        rm -rf "$state_dir"
    fi
}

# The pids above this shell (its parent up to, not including, pid 1), nearest first.
ancestors() {
    local pid=$$ line count=0
    local -a fields
    while [ "$count" -lt 8 ]; do
        read -r line 2>/dev/null <"/proc/$pid/stat" || break
        # "pid (comm) state ppid ...": the command name may hold spaces, so cut after ") ".
        read -r -a fields <<<"${line##*) }"
        pid=${fields[1]:-0}
        [ "$pid" -gt 1 ] 2>/dev/null || break
        echo "$pid"
        count=$((count + 1))
    done
}

start_watchdog() {
    command -v setsid >/dev/null 2>&1 || return 0
    [ -r "/proc/$$/stat" ] || return 0
    state_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpucluster-collect.XXXXXX") || { state_dir=; return 0; }
    local -a watched
    mapfile -t watched < <(ancestors)
    # setsid: a kill of the collector's process group (or session) must not take the watchdog with it.
    # shellcheck disable=SC2016 # the watchdog's own script: expanded by the sh that runs it
    setsid bash -c '
        dir=$1; shift
        while [ -d "$dir" ]; do
            for pid in "$@"; do
                # gone, or a zombie nobody reaped yet (kill -0 still succeeds on one)
                stat=
                read -r stat 2>/dev/null <"/proc/$pid/stat"
                case "$stat" in
                    "" | *") Z "* | *") X "*) gone=1 ;;
                    *) gone= ;;
                esac
                if [ -n "$gone" ]; then
                    pgid=$(cat "$dir/tool.pgid" 2>/dev/null)
                    if [ -n "$pgid" ]; then
                        kill -TERM -- "-$pgid" 2>/dev/null
                        for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
                            kill -0 -- "-$pgid" 2>/dev/null || break
                            sleep 0.25
                        done
                        kill -KILL -- "-$pgid" 2>/dev/null
                    fi
                    rm -rf "$dir"
                    exit 0
                fi
            done
            sleep 1
        done' gpucluster-collect-watchdog "$state_dir" "$$" "${watched[@]}" </dev/null >/dev/null 2>&1 &
    watchdog_pid=$!
}

run_tool() {
    local name=$1 limit=$2 rc
    shift 2
    echo "==> gpucluster-begin $name <=="
    current=$name
    started=$(now_us)
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "gpucluster-collect: $1: command not found"
        rc=127
    else
        # -k: a tool that ignores SIGTERM is killed 5 s later; stdin closed so nothing waits on it.
        # In the background so that a trapped signal interrupts the wait; timeout leads its group.
        timeout -k 5 "$limit" "$@" </dev/null 2>&1 &
        tool_pgid=$!
        if [ -n "$state_dir" ]; then
            echo "$tool_pgid" >"$state_dir/tool.pgid"
        fi
        wait "$tool_pgid"
        rc=$?
        tool_pgid=
        if [ -n "$state_dir" ]; then
            : >"$state_dir/tool.pgid"
        fi
    fi
    echo
    echo "==> gpucluster-end $name rc=$rc seconds=$(seconds_since "$started") <=="
    current=
}

if [ "$#" -eq 0 ]; then
    echo "usage: $0 @tool NAME TIMEOUT CMD [ARG...] ..." >&2
    exit 2
fi
trap stopped TERM HUP INT
trap finish EXIT
start_watchdog
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
