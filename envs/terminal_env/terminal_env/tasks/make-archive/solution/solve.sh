#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
tar czf backup.tar.gz project
