#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="amount") c=i; next} {s+=$c} END{printf "%.2f\n", s}' sales.csv > total.txt
