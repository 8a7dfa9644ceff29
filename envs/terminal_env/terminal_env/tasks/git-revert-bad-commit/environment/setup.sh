#!/bin/bash
# Run in the working directory before the agent starts.
set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
mkdir repo && cd repo && git init -q && echo 'print(2 + 2)' > calc.py && git add . && git commit -q -m calc && echo readme > README && git add . && git commit -q -m readme && echo 'print(2 - 2)' > calc.py && git commit -qam 'tweak calc'
