#!/bin/bash
# Run in the working directory before the agent starts.
set -e
mkdir -p data/a data/b
head -c 20000 /dev/zero > data/big.bin
head -c 100 /dev/zero > data/small.bin
head -c 10240 /dev/zero > data/a/edge.bin
head -c 50000 /dev/zero > data/b/huge.bin
