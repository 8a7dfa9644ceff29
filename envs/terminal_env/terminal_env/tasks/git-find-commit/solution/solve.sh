#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
git -C repo log --format=%H --grep='fix: overflow' > commit.txt
