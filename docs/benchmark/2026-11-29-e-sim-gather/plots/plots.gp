set terminal pngcairo size 900,600 font ',10'
set logscale y
set grid
set key outside right
set ylabel 'median latency (us)'
set output '/tmp/bsim2/plots/bcast_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'bcast, np=4 (lower is better)'
plot '/tmp/bsim2/plots/data/bcast_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/bsim2/plots/data/bcast_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned'
set output '/tmp/bsim2/plots/allgather_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'allgather, np=4 (lower is better)'
plot '/tmp/bsim2/plots/data/allgather_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/bsim2/plots/data/allgather_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned'
set output '/tmp/bsim2/plots/gather_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'gather, np=4 (lower is better)'
plot '/tmp/bsim2/plots/data/gather_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/bsim2/plots/data/gather_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned'
set output '/tmp/bsim2/plots/scatter_np4.png'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set title 'scatter, np=4 (lower is better)'
plot '/tmp/bsim2/plots/data/scatter_np4_sharm-hier.dat' using 1:2 with linespoints lw 1.5 title 'sharm-hier', \
  '/tmp/bsim2/plots/data/scatter_np4_tuned.dat' using 1:2 with linespoints lw 1.5 title 'tuned'
