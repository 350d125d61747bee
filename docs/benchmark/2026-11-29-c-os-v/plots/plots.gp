set terminal pngcairo size 900,600 font ',10'
set logscale y
set grid
set key outside right
set ylabel 'median latency (us)'
set output '/tmp/b4/plots/exscan_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'exscan, np=4 (lower is better)'
plot '/tmp/b4/plots/data/exscan_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/exscan_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/exscan_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/exscan_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/exscan_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/exscan_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/exscan_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/exscan_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'exscan, np=8 (lower is better)'
plot '/tmp/b4/plots/data/exscan_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/exscan_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/exscan_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/exscan_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/exscan_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/exscan_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/exscan_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/allgatherv_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allgatherv, np=4 (lower is better)'
plot '/tmp/b4/plots/data/allgatherv_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/allgatherv_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/allgatherv_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/allgatherv_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/allgatherv_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/allgatherv_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/allgatherv_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/allgatherv_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allgatherv, np=8 (lower is better)'
plot '/tmp/b4/plots/data/allgatherv_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/allgatherv_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/allgatherv_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/allgatherv_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/allgatherv_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/allgatherv_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/allgatherv_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/gatherv_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'gatherv, np=4 (lower is better)'
plot '/tmp/b4/plots/data/gatherv_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/gatherv_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/gatherv_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/gatherv_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/gatherv_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/gatherv_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/gatherv_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/gatherv_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'gatherv, np=8 (lower is better)'
plot '/tmp/b4/plots/data/gatherv_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/gatherv_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/gatherv_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/gatherv_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/gatherv_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/gatherv_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/gatherv_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/scatterv_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scatterv, np=4 (lower is better)'
plot '/tmp/b4/plots/data/scatterv_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/scatterv_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/scatterv_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/scatterv_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/scatterv_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/scatterv_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/scatterv_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/scatterv_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scatterv, np=8 (lower is better)'
plot '/tmp/b4/plots/data/scatterv_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/scatterv_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/scatterv_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/scatterv_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/scatterv_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/scatterv_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/scatterv_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/alltoallv_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoallv, np=4 (lower is better)'
plot '/tmp/b4/plots/data/alltoallv_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/alltoallv_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/alltoallv_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/alltoallv_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/alltoallv_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/alltoallv_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/alltoallv_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/alltoallv_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoallv, np=8 (lower is better)'
plot '/tmp/b4/plots/data/alltoallv_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/alltoallv_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/alltoallv_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/alltoallv_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/alltoallv_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/alltoallv_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/alltoallv_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/reduce_scatter_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'reduce_scatter, np=4 (lower is better)'
plot '/tmp/b4/plots/data/reduce_scatter_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/reduce_scatter_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/reduce_scatter_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/reduce_scatter_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/reduce_scatter_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/reduce_scatter_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/reduce_scatter_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b4/plots/reduce_scatter_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'reduce_scatter, np=8 (lower is better)'
plot '/tmp/b4/plots/data/reduce_scatter_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b4/plots/data/reduce_scatter_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b4/plots/data/reduce_scatter_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b4/plots/data/reduce_scatter_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b4/plots/data/reduce_scatter_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b4/plots/data/reduce_scatter_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b4/plots/data/reduce_scatter_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
