#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
find data -type f -size +10240c | sort > large.txt
