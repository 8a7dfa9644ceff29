#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
python3 - <<'EOF'
import re
s = open('settings.ini').read()
head, rest = s.split('[server]', 1)
rest = re.sub(r'^port = 8080$', 'port = 9090', rest, count=1, flags=re.M)
open('settings.ini', 'w').write(head + '[server]' + rest)
EOF
