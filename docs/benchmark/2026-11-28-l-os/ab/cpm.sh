#!/bin/bash
# cpm.sh ROUNDS OUT "LINES" SIZES: crowded Alltoall and Alltoallv (np=4 and 8 on
# 2 cores) with the crowded single-copy line (alltoall::CROWDED_PULL_MIN_BYTES)
# read from SHARM_CPM, which only a build with threshold-knob.patch applied
# reads (plugin in /tmp/plug-exp), configurations alternated in each round.
# LINES: among 1M 512K 256K 128K 64K and tuned.  The runs kept here:
#   cpm.sh 3  cpm.txt  "1M 512K 256K 64K tuned" 65536,262144,1048576,4194304
#   cpm.sh 7  cpm2.txt "1M 512K tuned"          524288,1048576,2097152
#   cpm.sh 7  cpm3.txt "1M 512K 256K 128K tuned" 131072,262144,524288
#   cpm.sh 10 cpm4.txt "1M 512K 256K tuned"     262144,524288,1048576
# Each line of OUT: configuration, round, op, bytes, np, median_us (bench/ab_table.py).
SB=/tmp/bb/sb.ompi.v
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq 1 $1); do
  for np in 4 8; do
  for v in $3; do
    P=/tmp/plug-exp; M=()
    case $v in 1M) C=1048576;; 512K) C=524288;; 256K) C=262144;; 128K) C=131072;; 64K) C=65536;;
      tuned) C=1048576; M=(--mca coll ^sharm --mca coll_tuned_priority 100);; esac
    SHARM_CPM=$C mpirun -np $np --oversubscribe --bind-to none -x SHARM_CPM --mca mca_base_component_path $P:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 \
      --mca coll_sharm_priority 100 "${M[@]}" $SB --ops alltoall,alltoallv --sizes $4 --max-iters 60 2>/dev/null | grep RESULT | grep -o -E "op=[a-z_]+|bytes=[0-9]+|np=[0-9]+|median_us=[0-9.]+" | paste -s -d' ' | sed 's/ op=/\nop=/g' | sed "s/^/$v r=$r /"
  done; done
done > $2
