#!/bin/bash
# cpm.sh ROUNDS OUT: crowded Alltoall(v) with the crowded pull threshold varied
SB=/tmp/bb/sb.ompi.v
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq 1 $1); do
  for np in 4 8; do
  for v in 1M 512K tuned; do
    P=/tmp/plug-exp; M=()
    case $v in 1M) C=1048576;; 512K) C=524288;; 256K) C=262144;; 64K) C=65536;;
      tuned) C=1048576; M=(--mca coll ^sharm --mca coll_tuned_priority 100);; esac
    SHARM_CPM=$C mpirun -np $np --oversubscribe --bind-to none -x SHARM_CPM --mca mca_base_component_path $P:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 \
      --mca coll_sharm_priority 100 "${M[@]}" $SB --ops alltoall,alltoallv --sizes 524288,1048576,2097152 --max-iters 60 2>/dev/null | grep RESULT | grep -o -E "op=[a-z_]+|bytes=[0-9]+|np=[0-9]+|median_us=[0-9.]+" | paste -s -d' ' | sed 's/ op=/\nop=/g' | sed "s/^/$v r=$r /"
  done; done
done > $2
