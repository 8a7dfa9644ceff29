#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
chmod +x run.sh && chmod 600 private.key
