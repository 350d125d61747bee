#!/bin/bash
# small_ab.sh ROUNDS OUT: before the session (/tmp/hp1plug, 69f26e7) / now (/tmp/newplug, 8ad712c) / tuned / sm, alternated
for r in $(seq 1 $1); do
  for v in old new tuned sm; do
    case $v in old) P=/tmp/hp1plug; M=();; new) P=/tmp/newplug; M=();;
      tuned) P=/tmp/hp1plug; M=(--mca coll ^sharm --mca coll_tuned_priority 100);;
      sm) P=/tmp/hp1plug; M=(--mca coll ^sharm --mca coll_sm_priority 100);; esac
    PLUG=$P /tmp/sb.sh "${M[@]}" -- --ops reduce,gather,alltoall --sizes 8,512 --max-iters 2000 | sed "s/^/$v r=$r /"
  done
done > $2
