"""Browser env: MiniWoB++ tasks in headless Chromium. Clients import the models only.

``BrowserEnv`` (and with it Playwright) loads on first use, so a client that imports
``browser_env.MODELS`` needs neither Playwright nor a browser.
"""

import typing as _typing

from openenv._lazy import lazy_exports as _lazy_exports

from .models import (
    MODELS,
    AnyBrowserAction,
    BrowserAction,
    BrowserObservation,
    BrowserResetOptions,
    BrowserState,
    ClickAction,
    FillAction,
    GotoAction,
    HoverAction,
    NoopAction,
    PressAction,
    ScrollAction,
    SelectAction,
)

if _typing.TYPE_CHECKING:
    from ._config import BrowserConfig
    from .env import BrowserEnv

__all__ = [
    "MODELS",
    "AnyBrowserAction",
    "BrowserAction",
    "BrowserConfig",
    "BrowserEnv",
    "BrowserObservation",
    "BrowserResetOptions",
    "BrowserState",
    "ClickAction",
    "FillAction",
    "GotoAction",
    "HoverAction",
    "NoopAction",
    "PressAction",
    "ScrollAction",
    "SelectAction",
]


__getattr__, __dir__ = _lazy_exports(__name__, {"BrowserEnv": ".env", "BrowserConfig": "._config"}, __all__)
