set terminal pngcairo size 900,600 font ',10'
set logscale y
set grid
set key outside right
set ylabel 'median latency (us)'
set output '/tmp/os-n/plots/bcast_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'bcast, np=4 (lower is better)'
plot '/tmp/os-n/plots/data/bcast_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/bcast_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/bcast_np4_sharm-bcast-linear.dat' using 1:2 with linespoints lw 1.5 title 'sharm-bcast-linear', \
  '/tmp/os-n/plots/data/bcast_np4_sharm-bcast-knomial.dat' using 1:2 with linespoints lw 1.5 title 'sharm-bcast-knomial', \
  '/tmp/os-n/plots/data/bcast_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/bcast_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/bcast_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/bcast_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/bcast_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/bcast_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'bcast, np=8 (lower is better)'
plot '/tmp/os-n/plots/data/bcast_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/bcast_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/bcast_np8_sharm-bcast-linear.dat' using 1:2 with linespoints lw 1.5 title 'sharm-bcast-linear', \
  '/tmp/os-n/plots/data/bcast_np8_sharm-bcast-knomial.dat' using 1:2 with linespoints lw 1.5 title 'sharm-bcast-knomial', \
  '/tmp/os-n/plots/data/bcast_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/bcast_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/bcast_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/bcast_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/bcast_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/reduce_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'reduce, np=4 (lower is better)'
plot '/tmp/os-n/plots/data/reduce_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/reduce_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/reduce_np4_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/os-n/plots/data/reduce_np4_sharm-reduce-linear.dat' using 1:2 with linespoints lw 1.5 title 'sharm-reduce-linear', \
  '/tmp/os-n/plots/data/reduce_np4_sharm-reduce-knomial.dat' using 1:2 with linespoints lw 1.5 title 'sharm-reduce-knomial', \
  '/tmp/os-n/plots/data/reduce_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/reduce_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/reduce_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/reduce_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/reduce_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/reduce_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'reduce, np=8 (lower is better)'
plot '/tmp/os-n/plots/data/reduce_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/reduce_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/reduce_np8_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/os-n/plots/data/reduce_np8_sharm-reduce-linear.dat' using 1:2 with linespoints lw 1.5 title 'sharm-reduce-linear', \
  '/tmp/os-n/plots/data/reduce_np8_sharm-reduce-knomial.dat' using 1:2 with linespoints lw 1.5 title 'sharm-reduce-knomial', \
  '/tmp/os-n/plots/data/reduce_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/reduce_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/reduce_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/reduce_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/reduce_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/allreduce_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allreduce, np=4 (lower is better)'
plot '/tmp/os-n/plots/data/allreduce_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/allreduce_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/allreduce_np4_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/os-n/plots/data/allreduce_np4_sharm-allreduce-linear.dat' using 1:2 with linespoints lw 1.5 title 'sharm-allreduce-linear', \
  '/tmp/os-n/plots/data/allreduce_np4_sharm-allreduce-knomial.dat' using 1:2 with linespoints lw 1.5 title 'sharm-allreduce-knomial', \
  '/tmp/os-n/plots/data/allreduce_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/allreduce_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/allreduce_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/allreduce_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/allreduce_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/allreduce_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allreduce, np=8 (lower is better)'
plot '/tmp/os-n/plots/data/allreduce_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/allreduce_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/allreduce_np8_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/os-n/plots/data/allreduce_np8_sharm-allreduce-linear.dat' using 1:2 with linespoints lw 1.5 title 'sharm-allreduce-linear', \
  '/tmp/os-n/plots/data/allreduce_np8_sharm-allreduce-knomial.dat' using 1:2 with linespoints lw 1.5 title 'sharm-allreduce-knomial', \
  '/tmp/os-n/plots/data/allreduce_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/allreduce_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/allreduce_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/allreduce_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/allreduce_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/allgather_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allgather, np=4 (lower is better)'
plot '/tmp/os-n/plots/data/allgather_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/allgather_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/allgather_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/allgather_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/allgather_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/allgather_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/allgather_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/allgather_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allgather, np=8 (lower is better)'
plot '/tmp/os-n/plots/data/allgather_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/allgather_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/allgather_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/allgather_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/allgather_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/allgather_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/allgather_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/gather_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'gather, np=4 (lower is better)'
plot '/tmp/os-n/plots/data/gather_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/gather_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/gather_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/gather_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/gather_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/gather_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/gather_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/gather_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'gather, np=8 (lower is better)'
plot '/tmp/os-n/plots/data/gather_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/gather_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/gather_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/gather_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/gather_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/gather_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/gather_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/scatter_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scatter, np=4 (lower is better)'
plot '/tmp/os-n/plots/data/scatter_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/scatter_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/scatter_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/scatter_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/scatter_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/scatter_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/scatter_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/scatter_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scatter, np=8 (lower is better)'
plot '/tmp/os-n/plots/data/scatter_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/scatter_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/scatter_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/scatter_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/scatter_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/scatter_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/scatter_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/alltoall_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoall, np=4 (lower is better)'
plot '/tmp/os-n/plots/data/alltoall_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/alltoall_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/alltoall_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/alltoall_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/alltoall_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/alltoall_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/alltoall_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/alltoall_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'alltoall, np=8 (lower is better)'
plot '/tmp/os-n/plots/data/alltoall_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/alltoall_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/alltoall_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/alltoall_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/alltoall_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/alltoall_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/alltoall_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/reduce_scatter_block_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'reduce_scatter_block, np=4 (lower is better)'
plot '/tmp/os-n/plots/data/reduce_scatter_block_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np4_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/reduce_scatter_block_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'reduce_scatter_block, np=8 (lower is better)'
plot '/tmp/os-n/plots/data/reduce_scatter_block_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np8_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/reduce_scatter_block_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/scan_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scan, np=4 (lower is better)'
plot '/tmp/os-n/plots/data/scan_np4_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/scan_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/scan_np4_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/os-n/plots/data/scan_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/scan_np4_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/scan_np4_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/scan_np4_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/scan_np4_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/scan_np8.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scan, np=8 (lower is better)'
plot '/tmp/os-n/plots/data/scan_np8_sharm.dat' using 1:2 with linespoints lw 3 title 'sharm', \
  '/tmp/os-n/plots/data/scan_np8_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/os-n/plots/data/scan_np8_sharm-ompi-kernels.dat' using 1:2 with linespoints lw 1.5 title 'sharm-ompi-kernels', \
  '/tmp/os-n/plots/data/scan_np8_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned', \
  '/tmp/os-n/plots/data/scan_np8_sm.dat' using 1:2 with linespoints lw 1.5 title 'sm', \
  '/tmp/os-n/plots/data/scan_np8_adapt.dat' using 1:2 with linespoints lw 1.5 title 'adapt', \
  '/tmp/os-n/plots/data/scan_np8_mpich.dat' using 1:2 with linespoints lw 1.5 title 'mpich', \
  '/tmp/os-n/plots/data/scan_np8_impi.dat' using 1:2 with linespoints lw 1.5 title 'impi'
set output '/tmp/os-n/plots/barrier.png'
set logscale x 2
set format x '%g'
set xlabel 'processes'
set title 'barrier (lower is better)'
plot '/tmp/os-n/plots/data/barrier_sharm.dat' using 1:2 with linespoints title 'sharm', \
  '/tmp/os-n/plots/data/barrier_sharm-hier.dat' using 1:2 with linespoints title 'sharm-hier', \
  '/tmp/os-n/plots/data/barrier_tuned.dat' using 1:2 with linespoints title 'tuned', \
  '/tmp/os-n/plots/data/barrier_sm.dat' using 1:2 with linespoints title 'sm', \
  '/tmp/os-n/plots/data/barrier_adapt.dat' using 1:2 with linespoints title 'adapt', \
  '/tmp/os-n/plots/data/barrier_mpich.dat' using 1:2 with linespoints title 'mpich', \
  '/tmp/os-n/plots/data/barrier_impi.dat' using 1:2 with linespoints title 'impi'
