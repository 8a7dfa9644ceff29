#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
sort -u names.txt > unique.txt
