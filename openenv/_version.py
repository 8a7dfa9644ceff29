"""The package version, in a module of its own so any part can read it without the package face."""

__version__ = "0.1.0"
