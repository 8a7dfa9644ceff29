#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
tr -cs 'A-Za-z' '\n' < story.txt | tr 'A-Z' 'a-z' | grep . | sort | uniq -c | sort -rn | head -n 1 | awk '{print $2}' > word.txt
