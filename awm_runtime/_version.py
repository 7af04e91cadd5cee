"""The installed awm-runtime version, in a module of its own: code that only needs the version (a Ray
actor checking it matches the driver, a report footer) imports nothing else of the package."""

__version__ = "0.1.0"

__all__ = ["__version__"]
