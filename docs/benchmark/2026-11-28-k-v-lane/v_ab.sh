#!/bin/bash
# v_ab.sh ROUNDS OUT: the v-variants and Reduce_scatter at 8 and 512 B,
# alternated launches: before the lane (8b53ec8) / with it (d9aee8f) / tuned / sm
SB=/tmp/bb/sb.ompi.v
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq 1 $1); do
  for v in old new tuned sm; do
    case $v in old) P=/tmp/plug-8b53; M=();; new) P=/tmp/plug-new; M=();;
      tuned) P=/tmp/plug-new; M=(--mca coll ^sharm --mca coll_tuned_priority 100);;
      sm) P=/tmp/plug-new; M=(--mca coll ^sharm --mca coll_sm_priority 100);; esac
    mpirun -np 2 --bind-to core --mca mca_base_component_path $P:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 \
      --mca coll_sharm_priority 100 "${M[@]}" $SB --ops gatherv,scatterv,allgatherv,alltoallv,reduce_scatter \
      --sizes 8,512 --max-iters 2000 2>/dev/null | grep RESULT | grep -o -E "op=[a-z_]+|bytes=[0-9]+|median_us=[0-9.]+|near_us=[0-9.]+|near_iters=[0-9]+|far_us=[0-9.]+|far_iters=[0-9]+" | paste -s -d' ' | sed 's/ op=/\nop=/g' | sed "s/^/$v r=$r /"
  done
done > $2
