set terminal pngcairo size 1440,680 font ',9'
set output 'reports/search-landscapes.png'
set multiplot layout 2,3
set logscale x
set key bottom right
set grid
set xlabel 'evaluations'
set ylabel 'best fitness / optimum'
set title 'sweep-h100 (148 timed)'
set xrange [1:143]
set yrange [*:1.01]
plot '/work/main/reports/search-landscapes-sweep-h100.dat' using 1:2 with lines dashtype 2 lc rgb 'gray40' title 'random (calculated)', '/work/main/reports/search-landscapes-sweep-h100.dat' using 1:3 with lines lw 2 title 'evolve', '/work/main/reports/search-landscapes-sweep-h100.dat' using 1:4 with lines lw 2 title 'evolve2', '/work/main/reports/search-landscapes-sweep-h100.dat' using 1:5 with lines lw 2 title 'evolve1', '/work/main/reports/search-landscapes-sweep-h100.dat' using 1:6 with lines lw 2 title 'random'
set title 'convolution\_milo\_A4000 (4201 timed)'
set xrange [1:673]
set yrange [*:1.01]
plot '/work/main/reports/search-landscapes-convolution_milo_A4000.dat' using 1:2 with lines dashtype 2 lc rgb 'gray40' title 'random (calculated)', '/work/main/reports/search-landscapes-convolution_milo_A4000.dat' using 1:3 with lines lw 2 title 'evolve', '/work/main/reports/search-landscapes-convolution_milo_A4000.dat' using 1:4 with lines lw 2 title 'evolve2', '/work/main/reports/search-landscapes-convolution_milo_A4000.dat' using 1:5 with lines lw 2 title 'evolve1', '/work/main/reports/search-landscapes-convolution_milo_A4000.dat' using 1:6 with lines lw 2 title 'random'
set title 'convolution\_milo\_A6000 (3889 timed)'
set xrange [1:4362]
set yrange [*:1.01]
plot '/work/main/reports/search-landscapes-convolution_milo_A6000.dat' using 1:2 with lines dashtype 2 lc rgb 'gray40' title 'random (calculated)', '/work/main/reports/search-landscapes-convolution_milo_A6000.dat' using 1:3 with lines lw 2 title 'evolve', '/work/main/reports/search-landscapes-convolution_milo_A6000.dat' using 1:4 with lines lw 2 title 'evolve2', '/work/main/reports/search-landscapes-convolution_milo_A6000.dat' using 1:5 with lines lw 2 title 'evolve1', '/work/main/reports/search-landscapes-convolution_milo_A6000.dat' using 1:6 with lines lw 2 title 'random'
set title 'convolution\_milo\_MI250X (4362 timed)'
set xrange [1:1335]
set yrange [*:1.01]
plot '/work/main/reports/search-landscapes-convolution_milo_MI250X.dat' using 1:2 with lines dashtype 2 lc rgb 'gray40' title 'random (calculated)', '/work/main/reports/search-landscapes-convolution_milo_MI250X.dat' using 1:3 with lines lw 2 title 'evolve', '/work/main/reports/search-landscapes-convolution_milo_MI250X.dat' using 1:4 with lines lw 2 title 'evolve2', '/work/main/reports/search-landscapes-convolution_milo_MI250X.dat' using 1:5 with lines lw 2 title 'evolve1', '/work/main/reports/search-landscapes-convolution_milo_MI250X.dat' using 1:6 with lines lw 2 title 'random'
set title 'dedispersion\_milo\_W6600 (11130 timed)'
set xrange [1:3920]
set yrange [*:1.01]
plot '/work/main/reports/search-landscapes-dedispersion_milo_W6600.dat' using 1:2 with lines dashtype 2 lc rgb 'gray40' title 'random (calculated)', '/work/main/reports/search-landscapes-dedispersion_milo_W6600.dat' using 1:3 with lines lw 2 title 'evolve', '/work/main/reports/search-landscapes-dedispersion_milo_W6600.dat' using 1:4 with lines lw 2 title 'evolve2', '/work/main/reports/search-landscapes-dedispersion_milo_W6600.dat' using 1:5 with lines lw 2 title 'evolve1', '/work/main/reports/search-landscapes-dedispersion_milo_W6600.dat' using 1:6 with lines lw 2 title 'random'
set title 'dedispersion\_milo\_W7800 (11130 timed)'
set xrange [1:2093]
set yrange [*:1.01]
plot '/work/main/reports/search-landscapes-dedispersion_milo_W7800.dat' using 1:2 with lines dashtype 2 lc rgb 'gray40' title 'random (calculated)', '/work/main/reports/search-landscapes-dedispersion_milo_W7800.dat' using 1:3 with lines lw 2 title 'evolve', '/work/main/reports/search-landscapes-dedispersion_milo_W7800.dat' using 1:4 with lines lw 2 title 'evolve2', '/work/main/reports/search-landscapes-dedispersion_milo_W7800.dat' using 1:5 with lines lw 2 title 'evolve1', '/work/main/reports/search-landscapes-dedispersion_milo_W7800.dat' using 1:6 with lines lw 2 title 'random'
unset multiplot
