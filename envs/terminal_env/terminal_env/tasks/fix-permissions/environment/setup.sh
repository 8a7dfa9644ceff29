#!/bin/bash
# Run in the working directory before the agent starts.
set -e
chmod 644 run.sh private.key
