# The plots of 'tuner report' for run 1 of '/tmp/sm90-run.db', data inline.
# Draw them again with: gnuplot plots.gp (in this directory).
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo noenhanced size 960,540 font 'sans,10'
} else {
    set terminal png noenhanced size 960,540
}

$evals << EOD
9 1 11.7929757
10 0.771331404 11.796999
11 0.879375403 11.7999762
12 0.711988269 11.8039995
13 0.956504638 11.8089885
14 0.928766041 11.8129715
15 0.906927933 11.815989
16 0.914033568 11.8199721
19 0.968793442 13.6169851
20 0.891564191 14.3259734
21 1.03999449 23.0459824
22 0.880315383 23.0500057
23 0.974968286 23.052983
24 0.842015292 23.0570063
25 0.909872187 23.0609894
26 0.980829269 23.0640069
27 0.886860096 23.0679899
28 0.874407515 23.071973
29 0.974810316 23.0759963
30 0.902359553 23.0789736
31 0.868662951 23.0829969
32 0.782911807 23.0879858
40 1.01355419 29.4259921
41 0.878571171 29.4319868
42 0.952198955 29.4369757
43 0.892345874 29.4420049
44 0.9250994 29.4459879
45 0.958014497 29.4509768
46 0.930660341 29.456006
47 0.972714375 29.4609949
48 0.892998249 30.3719938
57 0.876841214 31.7509845
58 0.937361255 32.5039878
59 1.02471798 33.3469927
60 0.910047447 34.0479746
61 0.940718824 34.7789705
63 0.881733866 35.7930064
67 1.00681802 37.726973
68 0.932518765 38.7050003
69 0.883156362 39.5939916
70 0.912038975 40.4889777
71 0.953740104 41.1819935
72 0.927392188 41.933991
73 0.936550512 42.814976
75 0.919293967 43.7749788
76 0.875191759 44.5320055
77 0.959627509 45.4269916
78 0.971774975 46.1069718
79 1.02614824 46.9419703
80 0.884523421 47.6769894
82 0.997879473 49.285993
83 0.903062018 49.8939961
84 0.981341418 50.7629916
85 0.956990847 51.4719799
86 0.894926182 52.1859974
87 0.916092038 52.8669834
89 0.920696969 54.1589901
90 0.988060611 55.0389692
91 0.912102239 55.8740079
92 0.918069078 56.6289827
93 0.879829213 57.4069709
94 0.907325065 58.258988
95 0.946470494 58.9969844
96 0.920179779 59.709996
104 0.928355552 61.1219779
106 0.915544844 61.9760066
107 0.839212746 62.9129961
108 0.882544613 63.8099939
111 0.880366516 65.061003
EOD
$best << EOD
9 1 11.7929757
21 1.03999449 23.0459824
129 1.03999449 67.0069993
EOD

reset
set output 'convergence.png'
set title 'run 1 (evolve): best fitness against evaluations'
set grid
set xlabel 'evaluations, in the order recorded'
set ylabel 'fitness: geometric-mean speedup over the baseline'
set key bottom right opaque box
set xrange [0:*]
plot $evals using 1:2 with points pt 7 ps 0.5 lc rgb '#b0b0b0' title 'fitness of each evaluation', \
     $best using 1:2 with steps lw 2 lc rgb '#1f77b4' title 'best so far, run 1'
unset output

reset
set output 'convergence-time.png'
set title 'run 1 (evolve): best fitness against wall time'
set grid
set xlabel 'seconds since the run started'
set ylabel 'fitness: geometric-mean speedup over the baseline'
set key bottom right opaque box
set xrange [0:*]
plot $evals using 3:2 with points pt 7 ps 0.5 lc rgb '#b0b0b0' title 'fitness of each evaluation', \
     $best using 3:2 with steps lw 2 lc rgb '#1f77b4' title 'best so far, run 1'
unset output

$speedup << EOD
0 1.01371793 1.32141218
1 1.03545986 1.31033762
2 1.10414689 1.11245731
3 0.972690285 1.07455373
4 1.07920353 1.07920353
EOD

reset
set output 'speedup.png'
set title 'run 1: speedup of the winner (variant 19) on each shape'
set grid
set ylabel 'speedup (their median / ours; above 1: ours is faster)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:*]
set key top left
set grid noxtics
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2
set xtics ('mission' 0, 'small' 1, 'long' 2, 'wide' 3, 'd128' 4)
plot $speedup using 2 title 'winner vs the baseline configuration' lc rgb '#1f77b4', \
     $speedup using 3 title 'each shape''s best vs the baseline' lc rgb '#aec7e8'
unset output

$verdicts << EOD
0 8 8 0
1 14 2 0
2 9 7 0
3 6 8 2
4 13 2 1
5 14 1 1
6 5 7 4
7 0 11 5
8 0 1 0
EOD

reset
set output 'verdicts.png'
set title 'run 1: the verdict on each candidate, per generation'
set grid
set xlabel 'generation'
set ylabel 'candidates'
set style data histogram
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.8
set key outside right top
set yrange [0:*]
set grid noxtics
plot $verdicts using 2:xtic(int($0) % 1 == 0 ? stringcolumn(1) : '') lc rgb '#4daf4a' title 'ok', \
     $verdicts using 3 lc rgb '#ff7f00' title 'smem', \
     $verdicts using 4 lc rgb '#4393c3' title 'slower'
unset output

$timing << EOD
0 NaN
-0.120 0.140697519
-0.090 -0.386918177
-0.060 0.0703487595
-0.030 0.668305026
0.000 0.844176924
0.030 -0.140697519
0.060 -0.316569418
0.090 0
0.120 -0.0351743798
-0.120 -0.0351743798
-0.090 -0.492441317
-0.060 0.211046279
-0.030 0.140697519
0.000 0.492441317
0.030 0
0.060 -0.562781886
0.090 0.668305026
0.120 0
-0.120 -0.809002545
-0.090 0.246220658


1 NaN
0.880 0.513674181
0.910 -0.0497104046
0.940 -0.0165701349
0.970 -0.0497104046
1.000 0.0165701349
1.030 -0.347965116
1.060 -0.248544307
1.090 -0.314824846
1.120 0.248552023
0.880 0.215411753
0.910 0.447393641
0.940 -0.513666465
0.970 0.845069162
1.000 -0.314824846
1.030 0.414253372
1.060 0.281692293
1.090 -0.248544307
1.120 0.115990944
0.880 -0.0497104046
0.910 0.61309499


2 NaN
1.880 0.247793836
1.910 -0.0218695521
1.940 -0.196778456
1.970 0.0218627646
2.000 0.0510153798
2.030 0
2.060 0.0874510582
2.090 -0.0728849319
2.120 -0.0437323167
1.880 -0.102037547
1.910 -0.0145797014
1.940 -0.0583052305
1.970 0.10932061
2.000 0
2.030 -0.211358158
2.060 0.0728781444
2.090 0.174908904
2.120 0
1.880 0.0218627646
1.910 -0.0728849319


3 NaN
2.880 2.21820397
2.910 2.00292767
2.940 1.9475131
2.970 0.0753964455
3.000 0.0917406326
3.030 0.0436014183
3.060 0.0417808856
3.090 0.0236161659
3.120 0.00545144624
2.880 -0.00545144624
2.910 0.0326985258
2.940 -0.536837175
2.970 -1.06731602
3.000 -1.00282585
3.030 -0.976485655
3.060 -1.07095032
3.090 -1.01009445
3.120 -0.97375824
2.880 -0.999191555
2.910 -1.02462487


4 NaN
3.880 -1.97626872
3.910 -0.648567097
3.940 -0.680865143
3.970 -0.641009723
4.000 -0.66471612
4.030 -0.0142596797
4.060 2.25630118
4.090 2.25218456
4.120 2.22468923
3.880 -0.149985205
3.910 -0.648915268
3.940 -0.654752265
3.970 -0.63379028
4.000 0.0142596797
4.030 0.370234534
4.060 0.314916193
4.090 0.894232961
4.120 1.29144568
3.880 1.32065114
3.910 1.4488193
EOD

reset
set output 'timing.png'
set title 'run 1: the winner''s timing samples (variant 19)'
set grid
set ylabel 'sample off the shape''s median (%)'
set style fill solid 0.25 border -1
set style boxplot nooutliers
set boxwidth 0.5
set key off
set grid noxtics
set xtics ('mission' 0, 'small' 1, 'long' 2, 'wide' 3, 'd128' 4)
set xrange [-0.6:4.6]
plot $timing index 0 using (0):2 with boxplot lc rgb '#1f77b4', $timing index 0 using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728', \
     $timing index 1 using (1):2 with boxplot lc rgb '#1f77b4', $timing index 1 using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728', \
     $timing index 2 using (2):2 with boxplot lc rgb '#1f77b4', $timing index 2 using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728', \
     $timing index 3 using (3):2 with boxplot lc rgb '#1f77b4', $timing index 3 using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728', \
     $timing index 4 using (4):2 with boxplot lc rgb '#1f77b4', $timing index 4 using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728'
unset output
