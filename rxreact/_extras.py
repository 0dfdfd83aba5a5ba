"""Optional dependencies: imported when a feature is first used, with an error that says how
to install them."""

from __future__ import annotations

import importlib
from types import ModuleType

from rxreact.errors import ConfigurationError

__all__ = ["import_extra"]


def import_extra(module: str, extra: str) -> ModuleType:
    """Import ``module``, or say which rxreact extra brings it.

    Raises:
        ConfigurationError: the module is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ConfigurationError(
            f"this feature needs the optional dependency {module.split('.')[0]!r}: "
            f"pip install 'rxreact[{extra}]' ({error})"
        ) from None
