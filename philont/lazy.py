"""Exports loaded on first use: a package's ``__getattr__`` (PEP 562), written once."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package`` that loads each name of ``where`` from the module
    ``where[name]`` on first use, and keeps it (the next use is a plain attribute). A name
    whose module is ``package.name`` is that submodule (``philont.tools``)."""

    def __getattr__(name: str) -> Any:
        module_name = where.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(module_name)
        value = module if module_name == f"{package}.{name}" else getattr(module, name)
        setattr(sys.modules[package], name, value)  # once
        return value

    return __getattr__
