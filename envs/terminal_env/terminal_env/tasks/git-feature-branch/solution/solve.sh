#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
cd repo && git checkout -q -b feature && echo done > feature.txt && git add feature.txt && git -c user.name=agent -c user.email=agent@example.com commit -q -m 'add feature'
