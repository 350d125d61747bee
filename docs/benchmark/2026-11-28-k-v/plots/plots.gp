set terminal pngcairo size 900,600 font ',10'
set logscale y
set grid
set key outside right
set ylabel 'median latency (us)'
set output '/tmp/bench-k-v/plots/allgatherv_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allgatherv, np=2 (lower is better)'
plot '/tmp/bench-k-v/plots/data/allgatherv_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bench-k-v/plots/data/allgatherv_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bench-k-v/plots/data/allgatherv_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bench-k-v/plots/data/allgatherv_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bench-k-v/plots/data/allgatherv_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bench-k-v/plots/data/allgatherv_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bench-k-v/plots/gatherv_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'gatherv, np=2 (lower is better)'
plot '/tmp/bench-k-v/plots/data/gatherv_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bench-k-v/plots/data/gatherv_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bench-k-v/plots/data/gatherv_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bench-k-v/plots/data/gatherv_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bench-k-v/plots/data/gatherv_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bench-k-v/plots/data/gatherv_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bench-k-v/plots/scatterv_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scatterv, np=2 (lower is better)'
plot '/tmp/bench-k-v/plots/data/scatterv_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bench-k-v/plots/data/scatterv_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bench-k-v/plots/data/scatterv_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bench-k-v/plots/data/scatterv_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bench-k-v/plots/data/scatterv_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bench-k-v/plots/data/scatterv_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bench-k-v/plots/alltoallv_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoallv, np=2 (lower is better)'
plot '/tmp/bench-k-v/plots/data/alltoallv_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bench-k-v/plots/data/alltoallv_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bench-k-v/plots/data/alltoallv_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bench-k-v/plots/data/alltoallv_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bench-k-v/plots/data/alltoallv_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bench-k-v/plots/data/alltoallv_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bench-k-v/plots/reduce_scatter_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'reduce_scatter, np=2 (lower is better)'
plot '/tmp/bench-k-v/plots/data/reduce_scatter_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bench-k-v/plots/data/reduce_scatter_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bench-k-v/plots/data/reduce_scatter_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bench-k-v/plots/data/reduce_scatter_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bench-k-v/plots/data/reduce_scatter_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bench-k-v/plots/data/reduce_scatter_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
