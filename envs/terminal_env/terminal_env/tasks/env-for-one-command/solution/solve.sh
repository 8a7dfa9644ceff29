#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
MODE=production ./show_mode.sh > mode.out
