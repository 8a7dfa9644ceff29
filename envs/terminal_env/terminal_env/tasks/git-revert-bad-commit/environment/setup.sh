#!/bin/bash
# Run in the working directory before the agent starts.
set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"  # fixed hashes
mkdir repo && cd repo && git init -q -b main && echo 'print(2 + 2)' > calc.py && git add . && git commit -q -m calc && echo readme > README && git add . && git commit -q -m readme && echo 'print(2 - 2)' > calc.py && git commit -qam 'tweak calc'
