"""An env whose server process starts a long-lived child at import (a helper daemon, as
a real env might start a browser or a shell). Only a kill of the whole process group
reaches that child: the server exiting alone leaves it orphaned."""

from __future__ import annotations

import os
import subprocess

from tests._envs import PidEnv

_child = subprocess.Popen(["sleep", "120"], stdin=subprocess.DEVNULL)
with open(os.environ["OPENENV_TEST_CHILD_PID_FILE"], "w") as f:
    f.write(str(_child.pid))


class SpawningEnv(PidEnv):
    """``PidEnv`` in a process with a ``sleep`` child."""
