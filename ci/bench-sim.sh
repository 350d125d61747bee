# ci/bench-sim.sh - the simulated-nodes mode of ci/bench.sh (issues 10, 14).
# Sourced by ci/bench.sh after its own functions (build_bench, prepare_sharm,
# measure_state, reap_strays); not a program of its own.
#
#   ci/bench.sh --sim-nodes 2x2 [--sizes ...] [--ops ...] [--repeat N]
#
# Launches bench/sharm_bench.c through ci/sim-nodes.sh (host names by
# unshare --uts and an rsh agent, TCP over loopback between the "nodes") in
# these configurations, interleaved and repeated as the single-node bench:
#
#   sharm-hier             coll_sharm_hierarchy on (shared memory inside a
#                          node, PML between the nodes' leaders)
#   tuned                  Open MPI's default (coll ^sharm)
#   han                    coll/han at priority 100 (checked selected for
#                          MPI_COMM_WORLD across the nodes before measuring)
#   sharm-ag-<alg>-<remap> Allgather only: coll_sharm_hierarchy_allgather_algorithm
#                          rd (recursive_doubling) | bruck, coll_sharm_allgather_remap
#                          none | exch | reorder (paper 003)
#   node-flat, node-group  one simulated node of the first node's slots:
#                          sharm flat (coll_sharm_hierarchy off) against the
#                          node group path (hierarchy on: the group's own
#                          segment), Bcast/Reduce/Allreduce only (on one node
#                          Barrier and Allgather never take the hierarchy)
#
# Every sharm launch runs with --counters (sharm's MPI_T counters around
# each (op, size)) and coll_sharm_verbose 10 (per-communicator set-up only:
# the group tree with each group's transport, and rank 0's inter-node block
# counts of the remapped Allgather); bench/report.py checks the counters
# (a call the hierarchy did not serve is not timed as sharm) and prints the
# section with the caveat: loopback TCP on 2 cores is not a network.

SIM_DEFAULT_CONFIGS="sharm-hier,tuned,han,sharm-ag,node"
SIM_AG_CONFIGS="sharm-ag-rd-none,sharm-ag-rd-exch,sharm-ag-rd-reorder,sharm-ag-bruck-none,sharm-ag-bruck-exch,sharm-ag-bruck-reorder"

# "2x2" -> "2:2,2"; "3:2,1,2" and "2,1,2" as ci/sim-nodes.sh takes them.
sim_layout() {
    local l=$1 n k i out=""
    if [[ $l =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]]; then
        n=${BASH_REMATCH[1]} k=${BASH_REMATCH[2]}
        for ((i = 0; i < n; i++)); do out+="${out:+,}$k"; done
        echo "$n:$out"
    elif [[ $l =~ ^([1-9][0-9]*:)?[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
        echo "$l"
    else
        return 1
    fi
}

# Slots of the first node of a layout ("2:3,1" -> 3).
sim_first_slots() {
    local l=${1#*:}
    echo "${l%%,*}"
}

sim_total() {
    local l=${1#*:} s t=0
    IFS=, read -r -a s <<<"$l"
    for l in "${s[@]}"; do t=$((t + l)); done
    echo $t
}

# sim_config NAME: sets SIM_OPTS (mpirun options), SIM_ON (layout),
# SIM_EXPECT (hier, flat or none: what sharm's counters must show),
# SIM_OPS (op restriction, empty for all).
sim_config() {
    local cfg=$1
    local sharm=(--mca mca_base_component_path "$OUT/components:$OMPI_COMPDIR"
        --mca coll_sharm_priority 100 --mca coll_sharm_verbose 10)
    SIM_ON=$SIM_LAYOUT SIM_EXPECT=hier SIM_OPS=""
    case "$cfg" in
        sharm-hier) SIM_OPTS=("${sharm[@]}" --mca coll_sharm_hierarchy on) ;;
        tuned) SIM_OPTS=(--mca coll ^sharm) SIM_EXPECT=none ;;
        han) SIM_OPTS=(--mca coll ^sharm --mca coll_han_priority 100) SIM_EXPECT=none ;;
        sharm-ag-*-*)
            local rest=${cfg#sharm-ag-}
            local alg=${rest%-*} remap=${rest##*-}
            [ "$alg" = rd ] && alg=recursive_doubling
            SIM_OPTS=("${sharm[@]}" --mca coll_sharm_hierarchy on
                --mca coll_sharm_hierarchy_allgather_algorithm "$alg"
                --mca coll_sharm_allgather_remap "$remap")
            SIM_OPS=allgather ;;
        node-flat)
            SIM_OPTS=("${sharm[@]}" --mca coll_sharm_hierarchy off)
            SIM_ON=$SIM_NODE_LAYOUT SIM_EXPECT=flat SIM_OPS=bcast,reduce,allreduce ;;
        node-group)
            SIM_OPTS=("${sharm[@]}" --mca coll_sharm_hierarchy on)
            SIM_ON=$SIM_NODE_LAYOUT SIM_OPS=bcast,reduce,allreduce ;;
        *) die "unknown simulated-nodes configuration '$cfg'" ;;
    esac
}

# Kills what a timed-out launch left: processes carrying the launch's
# marker (mpirun, and through the agent every daemon and rank), by pid.
sim_sweep() {
    "$REPO/ci/sim-nodes.sh" sweep "$1"
    reap_strays
}

# sim_run CONFIG LAUNCH_ID SIZES OPS BENCH_ARGS...
sim_run() {
    local cfg=$1 id=$2 sizes=$3 ops=$4
    shift 4
    sim_config "$cfg"
    local out="$RAW/$id.out" err="$RAW/$id.err" t0=$SECONDS mark="bench-$$-$id"
    local extra=()
    [ "$SIM_EXPECT" = none ] || extra=(--counters)
    # shellcheck disable=SC2086
    SIM_NODES_RUN_ID=$mark timeout -k 5 "$TIMEOUT" "$REPO/ci/sim-nodes.sh" run "$SIM_ON" \
        "${SIM_OPTS[@]}" -- "$BIN/sharm_bench.openmpi" --sizes "$sizes" --ops "$ops" \
        "${extra[@]}" "$@" ${SHARM_BENCH_ARGS:-} >"$out" 2>"$err" </dev/null
    local rc=$? status=ok
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        status=timeout
        sim_sweep "$mark"
    elif grep -q "status=WRONG" "$out"; then
        status=wrong
    elif [ $rc != 0 ]; then
        status=failed
    fi
    local np
    np=$(sim_total "$SIM_ON")
    {
        grep -E '^(RESULT|WRONG|INFO|COUNTERS) ' "$out"
        # rank 0's verbose-10 report of paper 003's remapping (stdout or
        # stderr, as Open MPI's output stream goes)
        cat "$out" "$err" | grep -oE 'allgather [A-Za-z]+ on [0-9]+ nodes: [0-9]+ inter-node blocks without remapping, [0-9]+ with' |
            sed -E 's/allgather ([A-Za-z]+) on ([0-9]+) nodes: ([0-9]+) [^,]*, ([0-9]+) with/REMAP variant=\1 nodes=\2 plain_blocks=\3 remapped_blocks=\4/' |
            sort -u
        # the group tree rank 0 printed (levels and transports)
        cat "$out" "$err" | grep -E '^(hierarchy: |[a-z0-9()=,]+: \[[0-9 ]+\] leader [0-9]+ (shm|pml)$|algorithms: )' |
            sort -u | sed 's/^/TREE line="/; s/$/"/'
    } | sed "s/^/config=$cfg launch=$id /" >>"$OUT/results.txt"
    echo "LAUNCH config=$cfg np=$np launch=$id sizes=$sizes ops=$ops rc=$rc status=$status secs=$((SECONDS - t0)) layout=$SIM_ON" \
        >>"$OUT/launches.txt"
    printf '  %-24s %-12s %3ss %s\n' "$cfg" "${id%-"$cfg"}" "$((SECONDS - t0))" \
        "$([ $status = ok ] || echo "<-- $status (rc=$rc, $err)")"
}

# han and tuned: one short launch across the nodes with coll_base_verbose
# must show the component selected for MPI_COMM_WORLD (han disqualifies
# itself on one node; across nodes it must engage, or it is not measured).
sim_preflight() {
    local cfg=$1 want
    local log="$RAW/preflight-$cfg.log"
    sim_config "$cfg"
    want=$cfg
    timeout -k 5 60 "$REPO/ci/sim-nodes.sh" run "$SIM_ON" "${SIM_OPTS[@]}" \
        --mca coll_base_verbose 10 --mca "coll_${want}_verbose" 30 -- \
        "$BIN/sharm_bench.openmpi" --ops barrier --sizes 8 --min-iters 1 \
        --max-iters 1 --max-warmup 0 >"$log" 2>&1
    local rc=$?
    if [ $rc != 0 ]; then
        echo "preflight failed (exit $rc, see $log)"
        return 1
    fi
    local n
    n=$(grep -cE "selecting +$want, priority +[0-9]+, Enabled" "$log")
    if [ "$n" -lt "$(sim_total "$SIM_ON")" ]; then
        echo "$want not selected on every process ($n lines, see $log)"
        return 1
    fi
    if grep -qE "selecting +sharm, priority" "$log"; then
        echo "sharm was selected although excluded (see $log)"
        return 1
    fi
}

sim_main() {
    SIM_LAYOUT=$(sim_layout "$SIM_NODES") || die "--sim-nodes '$SIM_NODES': want e.g. 2x2 or 2:2,2"
    SIM_NODE_LAYOUT="1:$(sim_first_slots "$SIM_LAYOUT")"
    [ -n "$SIZES_GIVEN" ] || SIZES="8,64K,1M"
    [ -n "$OPS_GIVEN" ] || OPS="bcast,reduce,allreduce,allgather,barrier"
    [ -n "$CONFIGS" ] || CONFIGS=$SIM_DEFAULT_CONFIGS
    local c ag want=()
    IFS=, read -r -a CONFIG_LIST <<<"$CONFIGS"
    for c in "${CONFIG_LIST[@]}"; do
        case "$c" in
            sharm-ag) IFS=, read -r -a ag <<<"$SIM_AG_CONFIGS"; want+=("${ag[@]}") ;;
            node) want+=(node-flat node-group) ;;
            *) want+=("$c") ;;
        esac
    done
    CONFIG_LIST=("${want[@]}")
    IFS=, read -r -a SIZE_LIST <<<"$SIZES"
    for c in "${CONFIG_LIST[@]}"; do sim_config "$c"; done

    "$REPO/ci/sim-nodes.sh" check || exit 2
    START=$SECONDS
    ensure_tools
    build_bench
    prepare_sharm
    ACTIVE=()
    for c in "${CONFIG_LIST[@]}"; do
        if [[ $c != tuned && $c != han ]] && [ $SHARM_OK = 0 ]; then
            record_config "$c" skipped "$SHARM_REASON"
            continue
        fi
        if [[ $c == tuned || $c == han ]]; then
            if ! why=$(sim_preflight "$c"); then
                log "bench: $c not usable across the simulated nodes: $why"
                record_config "$c" unavailable "$why"
                continue
            fi
        fi
        ACTIVE+=("$c")
        record_config "$c" ok ""
        sim_config "$c"
        echo "SIMCONFIG name=$c layout=$SIM_ON expect=$SIM_EXPECT ops=${SIM_OPS:-all}" \
            >>"$OUT/sim-configs.txt"
    done
    [ ${#ACTIVE[@]} -gt 0 ] || die "no configuration can run"
    measure_state start
    {
        echo "date=$(date -Is) host=$(hostname) cores=$NCORES"
        echo "cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')\""
        echo "git=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo none)"
        echo "mode=sim-nodes layout=$SIM_LAYOUT node_layout=$SIM_NODE_LAYOUT sizes=$SIZES budget_ms=$BUDGET_MS repeat=$REPEAT method=$METHOD"
        echo "ops=$OPS"
    } >"$OUT/meta.txt"
    log "bench: simulated nodes $SIM_LAYOUT (node comparison on $SIM_NODE_LAYOUT); configs: ${ACTIVE[*]}"
    log "bench: sizes=$SIZES ops=$OPS budget=${BUDGET_MS}ms/(op,size) repeat=$REPEAT"
    log "bench: loopback TCP on 2 cores is not a network: the timings show the transport mix works, not network performance"

    # More processes than cores: few iterations, as the oversubscribed bench.
    local args=(--budget-ms "$BUDGET_MS" --min-iters 3 --max-iters 200 --max-warmup 5 "${METHOD_ARGS[@]}")
    local gi round k n ops
    for ((gi = 0; gi * GROUP < ${#SIZE_LIST[@]}; gi++)); do
        local g=("${SIZE_LIST[@]:gi*GROUP:GROUP}")
        local sizes
        sizes=$(IFS=,; echo "${g[*]}")
        log "bench: size group $((gi + 1)): $sizes"
        for ((round = 1; round <= REPEAT; round++)); do
            n=${#ACTIVE[@]}
            for ((k = 0; k < n; k++)); do
                c=${ACTIVE[(k + gi + round - 1) % n]}
                sim_config "$c"
                ops=$OPS
                if [ -n "$SIM_OPS" ]; then
                    ops=$(python3 -c 'import sys; a=sys.argv[1].split(","); b=sys.argv[2].split(","); print(",".join(x for x in a if x in b))' "$OPS" "$SIM_OPS")
                fi
                [ "$gi" = 0 ] || ops=$(echo ",$ops," | sed 's/,barrier,/,/; s/^,//; s/,$//')
                [ -n "$ops" ] || continue
                sim_run "$c" "g${gi}-r${round}-${c}" "$sizes" "$ops" "${args[@]}"
            done
        done
    done
    log "bench: measurements took $((SECONDS - START)) s; machine state again:"
    measure_state end
    python3 "$REPO/bench/report.py" "$OUT" --metric "$METRIC"
    local rc=$?
    log "bench: total wall time $((SECONDS - START)) s"
    return $rc
}
