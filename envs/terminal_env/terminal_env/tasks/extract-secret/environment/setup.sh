#!/bin/bash
# Run in the working directory before the agent starts.
set -e
mkdir -p secret && echo XK-0000-Z > secret/old-code.txt && echo XK-4471-Q > secret/code.txt
tar czf bundle.tar.gz secret/old-code.txt secret/code.txt && rm -r secret
