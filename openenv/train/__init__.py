"""The reference GRPO trainer: any text env (RFC 0002), over the protocol.

    from openenv.train import TrainConfig, train
    rows = train(TrainConfig(env=["http://127.0.0.1:8000"], model="tiny", steps=50))

Needs the ``train`` extra (torch; ``torchmonarch`` for ``workers > 0``).
"""

from .._extras import require as _require

_require("torch", extra="train", feature="openenv.train")

from ._algos import (  # noqa: E402
    ADVANTAGES,
    LOSSES,
    LossOut,
    clipped_token_loss,
    dr_grpo_advantages,
    grpo_advantages,
    gspo_loss,
    k3_kl,
    rloo_advantages,
    token_logprobs,
)
from ._config import TrainConfig  # noqa: E402
from ._hf import random_hf_model  # noqa: E402
from ._metrics import read_metrics  # noqa: E402
from ._model import Policy, TinyConfig, TinyLM, load_policy  # noqa: E402
from ._plot import plot_rewards  # noqa: E402
from ._preflight import TrainingFailed  # noqa: E402
from ._render import CharRenderer, HFRenderer  # noqa: E402
from ._rollout import Episode, RolloutSettings, run_wave  # noqa: E402
from ._synthetic import synthetic_episodes  # noqa: E402
from ._text import NotATextEnv, TextEnv, action_field, observation_text, text_env  # noqa: E402
from ._trainer import advantages, train  # noqa: E402
from ._trl_env import trl_environment  # noqa: E402
from ._trl_rollout import TrlRollout  # noqa: E402
from ._workers import RolloutWorker  # noqa: E402

__all__ = [
    "ADVANTAGES",
    "LOSSES",
    "CharRenderer",
    "Episode",
    "HFRenderer",
    "LossOut",
    "NotATextEnv",
    "Policy",
    "RolloutSettings",
    "RolloutWorker",
    "TextEnv",
    "TinyConfig",
    "TinyLM",
    "TrainConfig",
    "TrainingFailed",
    "TrlRollout",
    "action_field",
    "advantages",
    "clipped_token_loss",
    "dr_grpo_advantages",
    "grpo_advantages",
    "gspo_loss",
    "k3_kl",
    "load_policy",
    "observation_text",
    "plot_rewards",
    "random_hf_model",
    "read_metrics",
    "rloo_advantages",
    "run_wave",
    "synthetic_episodes",
    "text_env",
    "token_logprobs",
    "train",
    "trl_environment",
]
