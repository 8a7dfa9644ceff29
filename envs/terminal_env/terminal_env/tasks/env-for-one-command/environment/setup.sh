#!/bin/bash
# Run in the working directory before the agent starts.
set -e
chmod +x show_mode.sh
