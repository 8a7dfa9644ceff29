#!/bin/bash
# Run in the working directory before the agent starts.
set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
mkdir repo && cd repo && git init -q -b main && echo base > base.txt && git add . && git commit -q -m base && git rev-parse HEAD > ../.main-head
