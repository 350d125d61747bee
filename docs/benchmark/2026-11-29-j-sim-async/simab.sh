#!/bin/bash
# usage: simab.sh ROUNDS LAYOUT ALG SIZES label=dir ...
rounds=$1 layout=$2 alg=$3 sizes=$4; shift 4
cd /work/main
for r in $(seq $rounds); do
  for cfg in "$@"; do
    label=${cfg%%=*} dir=${cfg#*=}
    timeout 300 ci/sim-nodes.sh run $layout --mca op ^avx --mca mca_base_component_path $dir:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 --mca coll_sharm_priority 100 --mca coll_sharm_hierarchy_allreduce_algorithm reduce_allreduce_bcast --mca coll_sharm_hierarchy_top_allreduce_algorithm $alg -- /tmp/bn2/bin/sharm_bench.openmpi --ops allreduce --sizes $sizes --budget-ms 1500 2>/dev/null | grep '^RESULT' | sed "s/^/$label round=$r /"
  done
done
