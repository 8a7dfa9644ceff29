#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
grep -c ERROR app.log > errors.txt
