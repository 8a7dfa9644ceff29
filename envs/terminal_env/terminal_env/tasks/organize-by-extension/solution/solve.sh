#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
cd inbox && for f in *.*; do ext="${f##*.}"; mkdir -p "$ext"; mv "$f" "$ext/"; done
