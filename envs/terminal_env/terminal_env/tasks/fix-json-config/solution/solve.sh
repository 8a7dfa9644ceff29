#!/bin/bash
# Reference solution, run in the task's working directory.
set -e
python3 - <<'EOF'
import re
s = open('config.json').read()
open('config.json', 'w').write(re.sub(r',(\s*[}\]])', r'\1', s))
EOF
