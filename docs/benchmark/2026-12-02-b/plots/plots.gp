set terminal pngcairo size 900,600 font ',10'
set logscale y
set grid
set key outside right
set ylabel 'median latency (us)'
set output '/tmp/bn-n/plots/bcast_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'bcast, np=2 (lower is better)'
plot '/tmp/bn-n/plots/data/bcast_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bn-n/plots/data/bcast_np2_sharm-bcast-linear.dat' using 1:2 with linespoints lw 1.5 title 'sharm-bcast-linear', \
  '/tmp/bn-n/plots/data/bcast_np2_sharm-bcast-knomial.dat' using 1:2 with linespoints lw 1.5 title 'sharm-bcast-knomial', \
  '/tmp/bn-n/plots/data/bcast_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bn-n/plots/data/bcast_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bn-n/plots/data/bcast_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bn-n/plots/data/bcast_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bn-n/plots/data/bcast_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bn-n/plots/reduce_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'reduce, np=2 (lower is better)'
plot '/tmp/bn-n/plots/data/reduce_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bn-n/plots/data/reduce_np2_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/bn-n/plots/data/reduce_np2_sharm-reduce-linear.dat' using 1:2 with linespoints lw 1.5 title 'sharm-reduce-linear', \
  '/tmp/bn-n/plots/data/reduce_np2_sharm-reduce-knomial.dat' using 1:2 with linespoints lw 1.5 title 'sharm-reduce-knomial', \
  '/tmp/bn-n/plots/data/reduce_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bn-n/plots/data/reduce_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bn-n/plots/data/reduce_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bn-n/plots/data/reduce_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bn-n/plots/data/reduce_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bn-n/plots/allreduce_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allreduce, np=2 (lower is better)'
plot '/tmp/bn-n/plots/data/allreduce_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bn-n/plots/data/allreduce_np2_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/bn-n/plots/data/allreduce_np2_sharm-allreduce-linear.dat' using 1:2 with linespoints lw 1.5 title 'sharm-allreduce-linear', \
  '/tmp/bn-n/plots/data/allreduce_np2_sharm-allreduce-knomial.dat' using 1:2 with linespoints lw 1.5 title 'sharm-allreduce-knomial', \
  '/tmp/bn-n/plots/data/allreduce_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bn-n/plots/data/allreduce_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bn-n/plots/data/allreduce_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bn-n/plots/data/allreduce_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bn-n/plots/data/allreduce_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bn-n/plots/allgather_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allgather, np=2 (lower is better)'
plot '/tmp/bn-n/plots/data/allgather_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bn-n/plots/data/allgather_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bn-n/plots/data/allgather_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bn-n/plots/data/allgather_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bn-n/plots/data/allgather_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bn-n/plots/data/allgather_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bn-n/plots/gather_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'gather, np=2 (lower is better)'
plot '/tmp/bn-n/plots/data/gather_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bn-n/plots/data/gather_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bn-n/plots/data/gather_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bn-n/plots/data/gather_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bn-n/plots/data/gather_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bn-n/plots/data/gather_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bn-n/plots/scatter_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scatter, np=2 (lower is better)'
plot '/tmp/bn-n/plots/data/scatter_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bn-n/plots/data/scatter_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bn-n/plots/data/scatter_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bn-n/plots/data/scatter_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bn-n/plots/data/scatter_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bn-n/plots/data/scatter_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bn-n/plots/alltoall_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoall, np=2 (lower is better)'
plot '/tmp/bn-n/plots/data/alltoall_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bn-n/plots/data/alltoall_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bn-n/plots/data/alltoall_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bn-n/plots/data/alltoall_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bn-n/plots/data/alltoall_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bn-n/plots/data/alltoall_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bn-n/plots/reduce_scatter_block_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'reduce_scatter_block, np=2 (lower is better)'
plot '/tmp/bn-n/plots/data/reduce_scatter_block_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bn-n/plots/data/reduce_scatter_block_np2_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/bn-n/plots/data/reduce_scatter_block_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bn-n/plots/data/reduce_scatter_block_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bn-n/plots/data/reduce_scatter_block_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bn-n/plots/data/reduce_scatter_block_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bn-n/plots/data/reduce_scatter_block_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bn-n/plots/scan_np2.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scan, np=2 (lower is better)'
plot '/tmp/bn-n/plots/data/scan_np2_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/bn-n/plots/data/scan_np2_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/bn-n/plots/data/scan_np2_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/bn-n/plots/data/scan_np2_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/bn-n/plots/data/scan_np2_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/bn-n/plots/data/scan_np2_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/bn-n/plots/data/scan_np2_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/bn-n/plots/barrier.png'
set logscale x 2
set format x '%g'
set xlabel 'processes'
set title 'barrier (lower is better)'
plot '/tmp/bn-n/plots/data/barrier_sharm.dat' using 1:2 with linespoints title 'sharm', \
  '/tmp/bn-n/plots/data/barrier_tuned.dat' using 1:2 with linespoints title 'tuned', \
  '/tmp/bn-n/plots/data/barrier_sm.dat' using 1:2 with linespoints title 'sm', \
  '/tmp/bn-n/plots/data/barrier_adapt.dat' using 1:2 with linespoints title 'adapt', \
  '/tmp/bn-n/plots/data/barrier_mpich.dat' using 1:2 with linespoints title 'mpich', \
  '/tmp/bn-n/plots/data/barrier_impi.dat' using 1:2 with linespoints title 'impi'
