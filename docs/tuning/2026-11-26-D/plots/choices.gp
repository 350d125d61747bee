set terminal pngcairo size 900,500 font ',10'
set logscale x 2
set grid
set key outside right
set xlabel 'bytes per process'
set ylabel 'processes'
set format x '%.0b%BB'
set ytics 1
set termoption noenhanced
set offsets graph 0.05, graph 0.05, 0, 0
set output '/tmp/tuneD/plots/barrier.png'
set title 'sharm barrier: chosen algorithm (auto = built-in rules kept)'
set yrange [1.5:2.5]
plot '/tmp/tuneD/plots/barrier.dat' using ($3==0 ? $1 : 1/0):2 with points pt 5 ps 3 lc 1 title 'auto', '/tmp/tuneD/plots/barrier.dat' using ($3==1 ? $1 : 1/0):2 with points pt 5 ps 3 lc 2 title 'linear', '/tmp/tuneD/plots/barrier.dat' using ($3==2 ? $1 : 1/0):2 with points pt 5 ps 3 lc 3 title 'knomial', '/tmp/tuneD/plots/barrier.dat' using ($3==3 ? $1 : 1/0):2 with points pt 5 ps 3 lc 4 title 'knomial radix=4'
set output '/tmp/tuneD/plots/bcast.png'
set title 'sharm bcast: chosen algorithm (auto = built-in rules kept)'
set yrange [1.5:2.5]
plot '/tmp/tuneD/plots/bcast.dat' using ($3==0 ? $1 : 1/0):2 with points pt 5 ps 3 lc 1 title 'auto', '/tmp/tuneD/plots/bcast.dat' using ($3==1 ? $1 : 1/0):2 with points pt 5 ps 3 lc 2 title 'linear', '/tmp/tuneD/plots/bcast.dat' using ($3==2 ? $1 : 1/0):2 with points pt 5 ps 3 lc 3 title 'knomial', '/tmp/tuneD/plots/bcast.dat' using ($3==3 ? $1 : 1/0):2 with points pt 5 ps 3 lc 4 title 'knomial radix=4'
set output '/tmp/tuneD/plots/reduce.png'
set title 'sharm reduce: chosen algorithm (auto = built-in rules kept)'
set yrange [1.5:2.5]
plot '/tmp/tuneD/plots/reduce.dat' using ($3==0 ? $1 : 1/0):2 with points pt 5 ps 3 lc 1 title 'auto', '/tmp/tuneD/plots/reduce.dat' using ($3==1 ? $1 : 1/0):2 with points pt 5 ps 3 lc 2 title 'linear', '/tmp/tuneD/plots/reduce.dat' using ($3==2 ? $1 : 1/0):2 with points pt 5 ps 3 lc 3 title 'knomial', '/tmp/tuneD/plots/reduce.dat' using ($3==3 ? $1 : 1/0):2 with points pt 5 ps 3 lc 4 title 'knomial radix=4'
set output '/tmp/tuneD/plots/allreduce.png'
set title 'sharm allreduce: chosen algorithm (auto = built-in rules kept)'
set yrange [1.5:2.5]
plot '/tmp/tuneD/plots/allreduce.dat' using ($3==0 ? $1 : 1/0):2 with points pt 5 ps 3 lc 1 title 'auto', '/tmp/tuneD/plots/allreduce.dat' using ($3==1 ? $1 : 1/0):2 with points pt 5 ps 3 lc 2 title 'linear', '/tmp/tuneD/plots/allreduce.dat' using ($3==2 ? $1 : 1/0):2 with points pt 5 ps 3 lc 3 title 'knomial', '/tmp/tuneD/plots/allreduce.dat' using ($3==3 ? $1 : 1/0):2 with points pt 5 ps 3 lc 4 title 'allgather', '/tmp/tuneD/plots/allreduce.dat' using ($3==4 ? $1 : 1/0):2 with points pt 5 ps 3 lc 5 title 'reduce_scatter_allgather'
set output '/tmp/tuneD/plots/alltoall.png'
set title 'sharm alltoall: chosen algorithm (auto = built-in rules kept)'
set yrange [1.5:2.5]
plot '/tmp/tuneD/plots/alltoall.dat' using ($3==0 ? $1 : 1/0):2 with points pt 5 ps 3 lc 1 title 'auto', '/tmp/tuneD/plots/alltoall.dat' using ($3==1 ? $1 : 1/0):2 with points pt 5 ps 3 lc 2 title 'linear', '/tmp/tuneD/plots/alltoall.dat' using ($3==2 ? $1 : 1/0):2 with points pt 5 ps 3 lc 3 title 'pairwise'
set output '/tmp/tuneD/plots/allgather.png'
set title 'sharm allgather: chosen algorithm (auto = built-in rules kept)'
set yrange [1.5:2.5]
plot '/tmp/tuneD/plots/allgather.dat' using ($3==0 ? $1 : 1/0):2 with points pt 5 ps 3 lc 1 title 'auto', '/tmp/tuneD/plots/allgather.dat' using ($3==1 ? $1 : 1/0):2 with points pt 5 ps 3 lc 2 title 'linear', '/tmp/tuneD/plots/allgather.dat' using ($3==2 ? $1 : 1/0):2 with points pt 5 ps 3 lc 3 title 'gather_bcast'
set output '/tmp/tuneD/plots/reduce_scatter.png'
set title 'sharm reduce_scatter: chosen algorithm (auto = built-in rules kept)'
set yrange [1.5:2.5]
plot '/tmp/tuneD/plots/reduce_scatter.dat' using ($3==0 ? $1 : 1/0):2 with points pt 5 ps 3 lc 1 title 'auto', '/tmp/tuneD/plots/reduce_scatter.dat' using ($3==1 ? $1 : 1/0):2 with points pt 5 ps 3 lc 2 title 'linear', '/tmp/tuneD/plots/reduce_scatter.dat' using ($3==2 ? $1 : 1/0):2 with points pt 5 ps 3 lc 3 title 'reduce_then_scatter'
set output '/tmp/tuneD/plots/scan.png'
set title 'sharm scan: chosen algorithm (auto = built-in rules kept)'
set yrange [1.5:2.5]
plot '/tmp/tuneD/plots/scan.dat' using ($3==0 ? $1 : 1/0):2 with points pt 5 ps 3 lc 1 title 'auto', '/tmp/tuneD/plots/scan.dat' using ($3==1 ? $1 : 1/0):2 with points pt 5 ps 3 lc 2 title 'linear', '/tmp/tuneD/plots/scan.dat' using ($3==2 ? $1 : 1/0):2 with points pt 5 ps 3 lc 3 title 'chain'
