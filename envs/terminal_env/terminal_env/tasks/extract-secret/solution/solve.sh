#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
tar xzf bundle.tar.gz && cp secret/code.txt answer.txt
