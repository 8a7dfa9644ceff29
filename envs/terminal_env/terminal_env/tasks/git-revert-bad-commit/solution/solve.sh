#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
cd repo && git -c user.name=agent -c user.email=agent@example.com revert --no-edit HEAD >/dev/null
