#!/bin/bash
# ab2.sh ROUNDS OUT OPS SIZES MAX_ITERS CONFIG...: np=2 runs of sharm_bench, bound
# to cores, alternated in each round.  CONFIG: name=plugindir[:mca k v ...] | impi | tuned
# Each line of OUT: configuration, round, op, bytes, np, median_us.
# B (from the environment, default /tmp/b/n2/bin): the bin/ folder of a
# ci/bench.sh --out folder (its sharm_bench builds);
# IMPI: where ci/bench.sh installed impi-rt.
B=${B:-/tmp/b/n2/bin}
IMPI=/var/cache/sharm/impi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rounds=$1 out=$2 ops=$3 sizes=$4 iters=$5; shift 5
for r in $(seq 1 $rounds); do
  for c in "$@"; do
    name=${c%%=*}; spec=${c#*=}
    case $name in
      impi) cmd=(env PATH=$IMPI/bin:$PATH LD_LIBRARY_PATH=$IMPI/lib FI_PROVIDER_PATH=$IMPI/lib I_MPI_FABRICS=shm I_MPI_PIN=1 I_MPI_PIN_PROCESSOR_LIST=0,1 $IMPI/bin/mpiexec -n 2 $B/sharm_bench.impi);;
      tuned) cmd=(mpirun -np 2 --bind-to core --mca coll ^sharm $B/sharm_bench.openmpi);;
      *) dir=${spec%%:*}; extra=(); [ "$dir" != "$spec" ] && read -ra extra <<< "${spec#*:}"
         cmd=(mpirun -np 2 --bind-to core --mca mca_base_component_path $dir:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 --mca coll_sharm_priority 100 "${extra[@]}" $B/sharm_bench.openmpi);;
    esac
    "${cmd[@]}" --ops $ops --sizes $sizes --max-iters $iters 2>/dev/null | grep RESULT | grep -o -E "op=[a-z_]+|bytes=[0-9]+|np=[0-9]+|median_us=[0-9.]+" | paste -s -d' ' | sed 's/ op=/\nop=/g' | sed "s/^/$name r=$r /"
  done
done > $out
