"""Backends register here by name; each imports its heavy library only when created."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from models.backends.base import Backend, BackendOptions
from models.foundation.errors import UnknownNameError

Factory = Callable[[str, BackendOptions], Backend]

_FACTORIES: dict[str, str | Factory] = {
    "llama-cpp": "models.backends.llama_cpp_backend:create",
    "transformers": "models.backends.transformers_backend:create",
    "openai": "models.backends.openai_backend:create",
}


def backend_names() -> list[str]:
    return sorted(_FACTORIES)


def create_backend(name: str, model: str, options: BackendOptions) -> Backend:
    """Create a backend. A missing package raises BackendUnavailable saying what to install."""
    if name not in _FACTORIES:
        raise UnknownNameError("backend", name, backend_names())
    factory = _FACTORIES[name]
    if isinstance(factory, str):
        module_name, factory_name = factory.split(":")
        factory = getattr(import_module(module_name), factory_name)
    return factory(model, options)


def register_backend(name: str, factory: str | Factory) -> None:
    """Add a backend: a factory, or "module:function" imported on first use."""
    _FACTORIES[name] = factory
