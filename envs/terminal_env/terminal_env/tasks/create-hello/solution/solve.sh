#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
echo 'Hello, terminal!' > hello.txt
