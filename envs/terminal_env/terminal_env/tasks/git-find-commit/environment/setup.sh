#!/bin/bash
# Run in the working directory before the agent starts.
set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"  # fixed hashes
mkdir repo && cd repo && git init -q && for m in 'add parser' 'docs: usage' 'fix: overflow in sum' 'refactor io' 'release 1.0'; do echo "$m" >> log.txt; git add .; git commit -q -m "$m"; done
