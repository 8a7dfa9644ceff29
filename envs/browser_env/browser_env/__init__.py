"""Browser env: MiniWoB++ tasks in headless Chromium. Clients import the models only.

``BrowserEnv`` (and with it Playwright) loads on first use, so a client that imports
``browser_env.MODELS`` needs neither Playwright nor a browser.
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name == "BrowserEnv":
        from .env import BrowserEnv

        return BrowserEnv
    if name == "BrowserConfig":
        from ._config import BrowserConfig

        return BrowserConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
