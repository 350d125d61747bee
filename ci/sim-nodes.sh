#!/usr/bin/env bash
# Simulated nodes on one machine: Open MPI treats processes as on different
# nodes when their daemons report different host names, so each name of a
# hostfile (sim01, sim02, ...) resolves to its own loopback address
# (127.0.2.<n> in a marked block of /etc/hosts) and the rsh agent
# (ci/sim-nodes-agent) starts that node's daemon in a UTS namespace named
# after it.  mpirun then starts one orted per simulated node, processes on
# different nodes talk TCP, and MPI_Get_processor_name says sim01, sim02, ...
#
#   ci/sim-nodes.sh check                  usable here? (exit 77 and a loud reason if not)
#   ci/sim-nodes.sh hosts N                /etc/hosts names sim01..simN (idempotent; never shrinks)
#   ci/sim-nodes.sh unhosts                remove the block again
#   ci/sim-nodes.sh hostfile LAYOUT [FILE] write a hostfile (default: print it)
#   ci/sim-nodes.sh run [--dry-run] [--np N] LAYOUT [mpirun options...] -- PROGRAM [ARGS...]
#   ci/sim-nodes.sh leftovers              processes any simulated-node job left behind
#   ci/sim-nodes.sh sweep ID               kill the processes of the job run with
#                                          SIM_NODES_RUN_ID=ID (after a caller's timeout
#                                          killed this script before its own check)
#
# LAYOUT is slots per node, optionally preceded by the node count:
# `3:2,1,3` (= `2,1,3`) means sim01 slots=2, sim02 slots=1, sim03 slots=3.
# `run` adds the names to /etc/hosts, writes the hostfile, prints the mpirun
# line on stderr and runs it (--dry-run: prints it on stdout, one word per
# line, and stops).  It does not take /tmp/sharm-cpu.lock (the caller wraps
# it: a second flock on the same file from a child would wait forever).
# After the job it looks for processes carrying the job's marker
# (SHARM_SIM_NODES_RUN, passed to every daemon and rank by the agent): any it
# finds are listed, killed by pid, and the exit code is 3.
#
# Environment on the simulated nodes: the agent starts daemons with an empty
# environment, as ssh would.  OMPI_MCA_* variables and --mca options reach
# every rank through mpirun; `run` adds `-x LD_LIBRARY_PATH` when it is set;
# anything else a program needs must be passed with -x.
#
# Exit codes: 0 ok, 2 usage, 3 processes left behind, 77 not available here
# (not root, no unshare, /etc/hosts not writable, no mpirun.openmpi), else
# mpirun's own code.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AGENT="$HERE/sim-nodes-agent"
HOSTS=${SIM_NODES_HOSTS_FILE:-/etc/hosts}
WORK=${SIM_NODES_DIR:-/tmp/sharm-sim-nodes}
BEGIN_MARK="# BEGIN sharm simulated nodes (ci/sim-nodes.sh unhosts removes this block)"
END_MARK="# END sharm simulated nodes"
UNAVAILABLE=77
LEFT_BEHIND=3

die() { echo "sim-nodes: $*" >&2; exit 2; }

unavailable() {
    echo "sim-nodes: *** SIMULATED NODES NOT AVAILABLE: $* ***" >&2
    exit $UNAVAILABLE
}

check() {
    [ "$(id -u)" -eq 0 ] || unavailable "needs root (unshare --uts and /etc/hosts); running as uid $(id -u)"
    command -v unshare >/dev/null 2>&1 || unavailable "unshare (util-linux) is missing"
    command -v mpirun.openmpi >/dev/null 2>&1 || unavailable "mpirun.openmpi is missing (ci/deps.sh installs it)"
    local out
    out=$(unshare --uts sh -c 'hostname sim-nodes-probe && hostname' 2>&1) ||
        unavailable "unshare --uts fails here: $out"
    [ "$out" = sim-nodes-probe ] || unavailable "a UTS namespace does not change the host name (got '$out')"
    [ -w "$HOSTS" ] || unavailable "$HOSTS is not writable"
    [ -x "$AGENT" ] || unavailable "the agent $AGENT is not executable"
}

name() { printf 'sim%02d' "$1"; }

# Number of names in the block now (0 without a block).
hosts_count() {
    awk -v b="$BEGIN_MARK" -v e="$END_MARK" '
        $0 == b { inside = 1; next } $0 == e { inside = 0; next }
        inside && $2 ~ /^sim[0-9]+$/ { n++ } END { print n + 0 }' "$HOSTS"
}

# Rewrites the hosts file without the block, then appends `block` (if any).
# In place (cat >), not by rename: /etc/hosts may be a bind mount.
hosts_rewrite() {
    local block=$1 tmp
    tmp=$(mktemp)
    awk -v b="$BEGIN_MARK" -v e="$END_MARK" '
        $0 == b { skip = 1; next } $0 == e { skip = 0; next } !skip' "$HOSTS" >"$tmp"
    [ -z "$block" ] || printf '%s\n' "$block" >>"$tmp"
    cat "$tmp" >"$HOSTS"
    rm -f "$tmp"
}

hosts_add() {
    local want=$1 have i block
    [[ $want =~ ^[0-9]+$ ]] && [ "$want" -ge 1 ] && [ "$want" -le 254 ] || die "hosts: 1..254 names"
    exec 9>>"$WORK/hosts.lock"
    flock 9
    have=$(hosts_count)
    # Never shrink: another job may be using the higher names.
    [ "$want" -gt "$have" ] || { exec 9>&-; return 0; }
    block=$BEGIN_MARK
    for ((i = 1; i <= want; i++)); do
        block+=$'\n'"127.0.2.$i $(name "$i")"
    done
    block+=$'\n'"$END_MARK"
    hosts_rewrite "$block"
    exec 9>&-
}

hosts_remove() {
    exec 9>>"$WORK/hosts.lock"
    flock 9
    hosts_rewrite ""
    exec 9>&-
}

# LAYOUT -> SLOTS array (one entry per node).
parse_layout() {
    local layout=$1 count="" list
    if [[ $layout == *:* ]]; then
        count=${layout%%:*}
        list=${layout#*:}
    else
        list=$layout
    fi
    [[ $list =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "layout '$layout': want e.g. 3:2,1,3 or 2,1,3"
    IFS=, read -r -a SLOTS <<<"$list"
    if [ -n "$count" ] && [ "$count" != "${#SLOTS[@]}" ]; then
        die "layout '$layout': $count nodes announced, ${#SLOTS[@]} slot counts given"
    fi
    [ "${#SLOTS[@]}" -le 254 ] || die "layout '$layout': at most 254 nodes"
}

hostfile_text() {
    local i
    for i in "${!SLOTS[@]}"; do
        echo "$(name $((i + 1))) slots=${SLOTS[$i]}"
    done
}

# Processes whose environment carries the marker `SHARM_SIM_NODES_RUN=<id>`
# (any id when empty), except this script.
marked_pids() {
    local pattern="SHARM_SIM_NODES_RUN=${1:-.\+}" f pid
    # -z: environ entries end in NUL; -s: processes vanish while we look.
    for f in $(grep -lsxz -e "$pattern" /proc/[0-9]*/environ); do
        pid=${f#/proc/}
        pid=${pid%/environ}
        [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] || echo "$pid"
    done
}

run() {
    local dry=0 np="" total=0 s hostfile id rc left i
    while [ $# -gt 0 ]; do
        case $1 in
            --dry-run) dry=1; shift ;;
            --np) np=$2; shift 2 ;;
            *) break ;;
        esac
    done
    [ $# -ge 1 ] || die "run: LAYOUT missing"
    parse_layout "$1"
    shift
    local opts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -ge 2 ] || die "run: '-- PROGRAM [ARGS...]' missing"
    shift
    for s in "${SLOTS[@]}"; do total=$((total + s)); done
    np=${np:-$total}
    mkdir -p "$WORK"
    hostfile="$WORK/hostfile-$(IFS=-; echo "${SLOTS[*]}")"
    local cmd=(mpirun.openmpi --allow-run-as-root -np "$np" --hostfile "$hostfile"
        --mca plm_rsh_agent "$AGENT"
        # More processes than cores: spinning ranks would starve each other.
        --mca mpi_yield_when_idle 1
        # The "nodes" reach each other over loopback only; Open MPI 5's TCP
        # BTL finds no reachable pairing unless told to use it.
        --mca btl_tcp_if_include lo)
    # Slots are declared, so only more processes than slots need this.
    [ "$np" -le "$total" ] || cmd+=(--oversubscribe)
    # A "node" with more slots than this machine has cores cannot bind one
    # process per core (Open MPI 5 refuses to start): leave those unbound.
    local most=0
    for s in "${SLOTS[@]}"; do [ "$s" -le "$most" ] || most=$s; done
    # (Unless the caller binds: Open MPI 5 takes one --bind-to only.)
    case " ${opts[*]:-} " in *" --bind-to "*) most=0 ;; esac
    [ "$most" -le "$(nproc)" ] || cmd+=(--bind-to none)
    [ -z "${LD_LIBRARY_PATH:-}" ] || cmd+=(-x LD_LIBRARY_PATH)
    cmd+=("${opts[@]}" "$@")
    if [ $dry -eq 1 ]; then
        printf '%s\n' "${cmd[@]}"
        return 0
    fi
    check
    hosts_add "${#SLOTS[@]}"
    hostfile_text >"$hostfile.tmp$$"
    mv "$hostfile.tmp$$" "$hostfile"
    echo "sim-nodes: $(printf '%q ' "${cmd[@]}")" >&2
    # A caller that sweeps on its own (for when it had to kill this script)
    # chooses the marker; only mpirun gets it as SHARM_SIM_NODES_RUN, so the
    # caller's own chain (flock, timeout, this script) is never taken for
    # something left behind.
    id=${SIM_NODES_RUN_ID:-"$$-$(date +%s%N)"}
    rc=0
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SHARM_SIM_NODES_RUN=$id \
        "${cmd[@]}" || rc=$?
    # Daemons exit a moment after mpirun; give them 5 s before calling them
    # left behind.
    for ((i = 0; i < 50; i++)); do
        left=$(marked_pids "$id")
        [ -n "$left" ] || break
        sleep 0.1
    done
    if [ -n "$left" ]; then
        echo "sim-nodes: *** PROCESSES LEFT BEHIND by the job (killed now): ***" >&2
        # shellcheck disable=SC2086
        ps -o pid,ppid,stat,cmd -p $(echo $left | tr ' ' ,) >&2 || true
        # shellcheck disable=SC2086
        kill -KILL $left 2>/dev/null || true
        return $LEFT_BEHIND
    fi
    return $rc
}

[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }
cmd=$1
shift
mkdir -p "$WORK"
case $cmd in
    check) check; echo "sim-nodes: available (root, unshare --uts, $HOSTS writable)" ;;
    hosts) [ $# -eq 1 ] || die "hosts N"; check; hosts_add "$1" ;;
    unhosts) check; hosts_remove ;;
    hostfile)
        [ $# -ge 1 ] || die "hostfile LAYOUT [FILE]"
        parse_layout "$1"
        if [ $# -ge 2 ]; then hostfile_text >"$2"; else hostfile_text; fi ;;
    run) run "$@" ;;
    leftovers)
        left=$(marked_pids "")
        if [ -n "$left" ]; then
            # shellcheck disable=SC2086
            ps -o pid,ppid,stat,cmd -p $(echo $left | tr ' ' ,)
            exit $LEFT_BEHIND
        fi
        echo "sim-nodes: no processes of simulated-node jobs" ;;
    sweep)
        [ $# -eq 1 ] && [ -n "$1" ] || die "sweep ID"
        # shellcheck disable=SC2046
        kill -KILL $(marked_pids "$1") 2>/dev/null || true ;;
    *) die "unknown command '$cmd' (check, hosts, unhosts, hostfile, run, leftovers, sweep)" ;;
esac
