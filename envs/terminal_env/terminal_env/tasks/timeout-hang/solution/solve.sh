#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
status=0; timeout 1 ./hang.sh || status=$?; echo $status > status.txt
