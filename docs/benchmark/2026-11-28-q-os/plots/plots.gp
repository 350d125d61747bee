set terminal pngcairo size 900,600 font ',10'
set logscale y
set grid
set key outside right
set ylabel 'median latency (us)'
set output '/tmp/b/q/plots/alltoall_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoall, np=4 (lower is better)'
plot '/tmp/b/q/plots/data/alltoall_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b/q/plots/data/alltoall_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b/q/plots/data/alltoall_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b/q/plots/data/alltoall_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b/q/plots/data/alltoall_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b/q/plots/data/alltoall_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b/q/plots/data/alltoall_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b/q/plots/alltoall_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoall, np=8 (lower is better)'
plot '/tmp/b/q/plots/data/alltoall_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b/q/plots/data/alltoall_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b/q/plots/data/alltoall_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b/q/plots/data/alltoall_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b/q/plots/data/alltoall_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b/q/plots/data/alltoall_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b/q/plots/data/alltoall_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b/q/plots/alltoallv_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoallv, np=4 (lower is better)'
plot '/tmp/b/q/plots/data/alltoallv_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b/q/plots/data/alltoallv_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b/q/plots/data/alltoallv_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b/q/plots/data/alltoallv_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b/q/plots/data/alltoallv_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b/q/plots/data/alltoallv_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b/q/plots/data/alltoallv_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/b/q/plots/alltoallv_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoallv, np=8 (lower is better)'
plot '/tmp/b/q/plots/data/alltoallv_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/b/q/plots/data/alltoallv_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/b/q/plots/data/alltoallv_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/b/q/plots/data/alltoallv_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/b/q/plots/data/alltoallv_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/b/q/plots/data/alltoallv_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/b/q/plots/data/alltoallv_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
