#!/bin/bash
# os_ab.sh ROUNDS OUT OLD NEW OPS SIZES MAX_ITERS: crowded runs (np=4 and 8 on
# 2 cores) of sharm_bench, alternated in each round: the plugin in directory
# OLD, the one in NEW, coll/tuned and coll/sm.  The runs kept here:
#   os_ab.sh 5 os2.txt  <7bcf114> <7d71e5d> alltoallv 512,4096,8192 300
#   os_ab.sh 6 wide.txt <5449cc3> <fd59562> alltoall,alltoallv 16384,32768 200
# and, with SB=<bin of a ci/bench.sh --out folder>/sharm_bench.openmpi, in
# ../../2026-11-28-p-os-spaced/ab/:
#   os_ab.sh 4 sp1.txt <5133466> <the spaced rounds> alltoallv,alltoall 8192,16384,65536,131072 150
#   os_ab.sh 8 sp2.txt <5133466> <the spaced rounds> alltoallv 8192,32768,98304,131072,196608 150
# Each line of OUT: configuration, round, op, bytes, np, median_us (bench/ab_table.py).
SB=${SB:-/tmp/bb/sb.ompi.v}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq 1 $1); do
  for np in 4 8; do
  for v in old new tuned sm; do
    case $v in old) P=$3; M=();; new) P=$4; M=();;
      tuned) P=$4; M=(--mca coll ^sharm --mca coll_tuned_priority 100);;
      sm) P=$4; M=(--mca coll ^sharm --mca coll_sm_priority 100);; esac
    mpirun -np $np --oversubscribe --bind-to none --mca mca_base_component_path $P:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 \
      --mca coll_sharm_priority 100 "${M[@]}" $SB --ops $5 --sizes $6 --max-iters $7 2>/dev/null | grep RESULT | grep -o -E "op=[a-z_]+|bytes=[0-9]+|np=[0-9]+|median_us=[0-9.]+" | paste -s -d' ' | sed 's/ op=/\nop=/g' | sed "s/^/$v r=$r /"
  done; done
done > $2
