#!/bin/bash
# Run in the working directory before the agent starts.
set -e
chmod +x hang.sh
