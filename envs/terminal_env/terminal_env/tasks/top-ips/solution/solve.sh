#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
awk '{print $1}' access.log | sort | uniq -c | sort -rn | head -n 3 | awk '{print $2}' > top3.txt
