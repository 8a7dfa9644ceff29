#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
cd repo && git init -q && git add -A && git -c user.name=agent -c user.email=agent@example.com commit -q -m 'initial commit'
