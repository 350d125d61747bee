#!/bin/bash
# lane_ab.sh ROUNDS OUT: old (/tmp/hp0) / new (/tmp/hp1plug) / tuned, alternated
for r in $(seq 1 $1); do
  for v in old new tuned; do
    case $v in old) P=/tmp/hp0; M=();; new) P=/tmp/hp1plug; M=();; tuned) P=/tmp/hp0; M=(--mca coll tuned,basic,libnbc,self);; esac
    PLUG=$P /tmp/sb.sh "${M[@]}" -- --ops gather,scatter,allgather,alltoall --sizes 8,512 --max-iters 2000 | sed "s/^/$v r=$r /"
  done
done > $2
