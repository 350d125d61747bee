#!/bin/bash
# sb.sh [mca args...] -- sharm_bench args
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mca=(); while [ "$1" != "--" ]; do mca+=("$1"); shift; done; shift
env ${SHARM_B:+SHARM_B=$SHARM_B} mpirun ${SHARM_B:+-x SHARM_B} -np 2 --bind-to core --mca mca_base_component_path ${PLUG:-/tmp/plug}:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 --mca coll_sharm_priority 100 "${mca[@]}" /tmp/bb/sb.ompi "$@" 2>/dev/null | grep RESULT | grep -o -E "op=[a-z]+|bytes=[0-9]+|median_us=[0-9.]+|near_us=[0-9.]+|near_iters=[0-9]+|far_us=[0-9.]+|far_iters=[0-9]+|iters=[0-9]+" | paste -s -d' ' | sed 's/ op=/\nop=/g'
