"""Training on the runs of agents that own their loop, from what the capture proxy saw.

    from openenv.agentrl import train_agent
    rows = train_agent(TrainConfig(env=[TERMINAL_URL], model=MODEL_DIR), ["touch-a", "touch-b"])

``train_agent`` (``openenv train --agent simple --task ID``) serves the policy being
trained in its own process (``ServedPolicy``: ``openenv policy serve``'s app, new weights
pushed in place after each step), puts the capture proxy in front of it, starts groups
of agent runs per task (``SimpleShellAgent``: an ``openai`` SDK loop in a terminal env
session), and trains with the trainer's GRPO update on each run's ``TrainingTrace``, with
the verifier's reward. ``name_file_tasks`` is a terminal task family a small model
learns on CPU, ``command_prior`` such a model to start from. Needs the ``train`` and
``capture`` extras. See docs/train.md.
"""

from ._runs import AGENTS, Agent, AgentRunTrainer, CapturedRun, trace_episodes, train_agent
from ._served import ServedPolicy
from ._simple import AgentRun, SimpleShellAgent
from ._tasks import command_prior, name_file_tasks

__all__ = [
    "AGENTS",
    "Agent",
    "AgentRun",
    "AgentRunTrainer",
    "CapturedRun",
    "ServedPolicy",
    "SimpleShellAgent",
    "command_prior",
    "name_file_tasks",
    "trace_episodes",
    "train_agent",
]
