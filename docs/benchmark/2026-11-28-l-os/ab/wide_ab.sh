#!/bin/bash
# os_ab.sh ROUNDS OUT: crowded Alltoallv (np=4 and 8 on 2 cores), alternated:
# round by round (d9aee8f) / all published first / tuned / sm
SB=/tmp/bb/sb.ompi.v
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq 1 $1); do
  for np in 4 8; do
  for v in old new tuned sm; do
    case $v in old) P=/tmp/plug-os2; M=();; new) P=/tmp/plug-wide; M=();;
      tuned) P=/tmp/plug-os2; M=(--mca coll ^sharm --mca coll_tuned_priority 100);;
      sm) P=/tmp/plug-os2; M=(--mca coll ^sharm --mca coll_sm_priority 100);; esac
    mpirun -np $np --oversubscribe --bind-to none --mca mca_base_component_path $P:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 \
      --mca coll_sharm_priority 100 "${M[@]}" $SB --ops alltoall,alltoallv --sizes 16384,32768 --max-iters 200  2>/dev/null | grep RESULT | grep -o -E "op=[a-z_]+|bytes=[0-9]+|np=[0-9]+|median_us=[0-9.]+" | paste -s -d' ' | sed 's/ op=/\nop=/g' | sed "s/^/$v r=$r /"
  done; done
done > $2
