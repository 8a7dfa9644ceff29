"""``ServedPolicy``: the policy being trained, served by the trainer's own process.

``openenv policy serve``'s app (an OpenAI-compatible chat completions server that
returns prompt token ids, sampled ids and their logprobs) over a ``LocalModel``, run on
a thread of the trainer's process. Agents (through the capture proxy) call it like any
model server; after each optimiser step the trainer ``push``es the new weights into the
served model in place, between two sampling batches, with no restart: the next call
samples from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

__all__ = ["ServedPolicy"]


class ServedPolicy:
    """A ``LocalModel`` of ``checkpoint`` behind the ``policy serve`` app, on loopback.

    ``url`` is the server's root (the OpenAI base URL is ``url + "/v1"``); ``version``
    counts the pushes. Use as a context manager, or ``start`` / ``stop``.
    """

    def __init__(self, checkpoint: str, *, seed: int = 0, device: str = "cpu", name: str = "policy") -> None:
        from ..policy._local import LocalModel

        self.model = LocalModel(checkpoint, seed=seed, device=device)
        self.name = name
        self.version = 0
        self._server: Any = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the served policy is not started")
        return str(self._server.url)

    def start(self) -> ServedPolicy:
        from ..policy._serve import serve_app
        from ..server import serve_in_background

        self._server = serve_in_background(serve_app(self.model, model_name=self.name), start_timeout_s=30.0)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> ServedPolicy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def push(self, state: Mapping[str, torch.Tensor], version: int | None = None) -> None:
        """Copy ``state`` (a state dict of the same architecture) into the served model.

        Taken under the model's sampling lock, so a batch being sampled finishes on the
        old weights and the next one starts on the new; no request is dropped.
        """
        served = self.model.policy.model
        with self.model._lock, torch.no_grad():  # the lock LocalModel samples under
            served.load_state_dict(state, strict=True)
        self.version = self.version + 1 if version is None else version

    def state(self) -> dict[str, torch.Tensor]:
        """A copy of the served weights (CPU tensors)."""
        with self.model._lock:
            return {k: v.detach().cpu().clone() for k, v in self.model.policy.model.state_dict().items()}
