"""The Ray engine (`--engine ray`): a local Ray instance on 127.0.0.1 with two workers
judges like a local run, row for row, and goes on from a killed local run's rows."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from app.records import Judgment
from tests.app.cli.test_cli_resume import ROOT, ROWS, command, kill_after, rows_file, run
from tests.support.needs import need_module

need_module("ray", module_level=True)

# what may differ between two runs of the same rows: timing
VARYING = ("latency_s",)


def judged(path: Path) -> list[dict]:
    """Each row without its timing, floats to 9 places: rows scored in other batches differ
    in the last bits of the model's arithmetic (1e-15 here), never in a decision."""
    rows = []
    for line in path.read_text().splitlines():
        data = Judgment.model_validate(json.loads(line)).model_dump(mode="json")
        rows.append(_rounded({k: v for k, v in data.items() if k not in VARYING}))
    return rows


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


@pytest.mark.slow
def test_two_ray_workers_judge_like_a_local_run_and_resume_a_killed_one(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    source = rows_file(tmp_path / "in.jsonl")
    with source.open("a") as stream:
        stream.write("not json\n")  # a bad row: the same error row on both engines
    local_out, ray_out = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    local = run(command(tiny_gguf_model, source, local_out))
    assert local.returncode == 1, local.stderr  # the bad row

    args = command(tiny_gguf_model, source, ray_out)
    killed = kill_after(args, ray_out, rows=4)  # a local run, killed after 4 rows
    assert killed.returncode == -signal.SIGKILL
    on_ray = run([*args, "--engine", "ray", "--workers", "2", "--window", "4"])
    assert on_ray.returncode == 1, on_ray.stderr
    assert "resuming:" in on_ray.stderr
    assert len(judged(ray_out)) == ROWS + 1
    assert judged(ray_out) == judged(local_out)


def test_a_second_judge_is_refused_on_ray_with_what_to_do(tmp_path: Path) -> None:
    from app.batches.ray_engine import RayJudge, judge_rows_on_ray
    from app.judging.config import JudgeConfig
    from models.backends.base import BackendOptions
    from models.foundation.errors import PocketJudgeError

    config = JudgeConfig(cascade=object())  # type: ignore[arg-type]
    with pytest.raises(PocketJudgeError, match="does not run on the Ray engine"):
        next(judge_rows_on_ray([], RayJudge(None, BackendOptions(), None, config), workers=2,
                               window=1))  # fmt: skip


@pytest.mark.slow
def test_the_local_instance_listens_on_127_0_0_1_only() -> None:
    """In a fresh process, as the CLI starts it: Ray reads the loopback switch on import."""
    import subprocess
    import sys

    code = (
        "from app.batches.ray_engine import _prepare_local, _connect\n"
        "ray = _prepare_local()\n"
        "_connect(ray, None, 1)\n"
        "print(ray.util.get_node_ip_address(), ray.get_runtime_context().gcs_address)\n"
        "ray.shutdown()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    node, gcs = done.stdout.split()[-2:]
    assert node == "127.0.0.1" and gcs.startswith("127.0.0.1:")
