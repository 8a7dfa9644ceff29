#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
find docs -name '*.md' -exec sed -i 's/colour/color/g' {} +
