"""What `make test` guarantees is never skipped in CI: a missing package, model or data file
fails there, saying what to run, and skips elsewhere with the same words."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.needs import need_model, need_module, shared_file


def test_in_ci_a_missing_package_fails_and_says_what_to_run(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"no_such_package.*make setup.*CI runs"):
        need_module("no_such_package")


def test_outside_ci_the_same_skips_with_the_same_words(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"no_such_package.*make setup"):
        need_module("no_such_package")


def test_a_missing_model_or_shared_file_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match=r"make models"):
        need_model(tmp_path / "absent.gguf", "absent")
    with pytest.raises(pytest.fail.Exception, match=r"no/such\.jsonl is missing.*\.\./shared"):
        shared_file("no/such.jsonl")


def test_what_is_there_is_returned(tmp_path: Path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    assert need_model(model, "m") == model
    assert need_module("json").dumps([1]) == "[1]"
    assert shared_file("autoj").is_dir()
