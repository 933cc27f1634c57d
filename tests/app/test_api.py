"""The Python API (app.api): the README's example runs as written, on the tiny model."""

import json
import re
from pathlib import Path

import pytest

from app.api import load_judge
from app.records import Status
from models.foundation.errors import InputError

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    section = README.read_text(encoding="utf-8").split("## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs(tiny_gguf_model: Path, tmp_path: Path, monkeypatch, capsys):
    rows = [
        {"id": "pair", "question": "2+2?", "answers": ["4", "5"]},
        {"id": "bad", "question": "", "answers": ["x"]},
        {"id": "one", "question": "Capital of France?", "answers": ["Paris"]},
    ]
    (tmp_path / "items.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    monkeypatch.chdir(tmp_path)
    code = readme_example()
    assert '"pj-smollm2-135m"' in code
    exec(code.replace('"pj-smollm2-135m"', repr(str(tiny_gguf_model))), {})
    printed = capsys.readouterr().out.splitlines()
    saved = [line.split() for line in printed[-3:]]
    assert [s[0] for s in saved] == ["pair", "bad", "one"]
    assert saved[0][1] == "ok" and saved[1][1] == "error"  # the grammar keeps replies readable
    assert len(Path("judged.jsonl").read_text().splitlines()) == 3


def test_calls_override_the_judge_settings_and_bad_items_say_why(tiny_gguf_model: Path):
    with load_judge(str(tiny_gguf_model), threads=1, swap=False) as judge:
        assert judge.config.swap is False and judge.config.judge.uncertain_below == 0.5
        item = {"question": "2+2?", "answers": ["4", "5"]}
        assert judge.judge(item).swapped is False
        assert judge.judge(item, swap=True).swapped is True
        with pytest.raises(InputError, match="not a judge item"):
            judge.judge({"question": "2+2?"})
        judged = judge.judge(item)
        assert judged.status is Status.OK, judged.error  # the grammar keeps the reply parseable
