"""PocketJudge from Python: load a judge, judge items or a file, read judgments back.

    from app.api import load_judge, read_judgments

    with load_judge("pj-smollm2-135m", threads=1) as judge:
        judgment = judge.judge({"question": "2+2?", "answers": ["4", "5"]})
        print(judgment.winner, judgment.confidence, judgment.uncertain)
        judge.judge_file("items.jsonl", out="judged.jsonl")
    judgments = read_judgments("judged.jsonl")

The judge starts from its registry entry's settings (template, pair combine,
tie margin, input cap, confidence threshold, criteria), as the CLI and the app
do; keyword arguments of `load_judge`, `judge` and `judge_file` change any
`JudgeConfig` field of the run (`mode="generate"`, `feedback=True`, `swap=False`...)
or judging setting (`tie_margin=0.1`, `criterion_scores=False`: models/judge_settings.py).
Bad rows of a file become error judgments naming the line and field; the other
rows are judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any

from app.io.judgments import read_judgments
from app.io.reader import InputRow, read_rows
from app.io.writer import write_jsonl
from app.judging.config import JudgeConfig
from app.judging.service import JudgeService
from app.judging.settings import SettingsLayer, judge_config, with_changes
from app.records import JudgeItem, Judgment
from models.backends.base import Backend, BackendOptions, ScoreRequest
from models.foundation.errors import InputError
from models.loader import LoadedJudge, open_judge
from models.registry import ModelEntry
from models.run_settings import RUN_DEFAULTS

__all__ = ["Judge", "JudgeConfig", "JudgeItem", "Judgment", "load_judge", "read_judgments"]


class Judge:
    """A loaded judge model and the settings it judges with."""

    def __init__(
        self, loaded: LoadedJudge, config: JudgeConfig, opened: dict[str, Any] | None = None
    ) -> None:
        self.loaded = loaded
        self.config = config
        self.service = JudgeService(loaded.backend, loaded.name)
        self.opened = opened or {}  # load_judge's arguments: another engine opens the same

    def more_engines(self, count: int) -> list[Judge]:
        """`count` more judges of this model with these settings, each its own engine with
        one thread (a batch's engine pool: app/batches/engine_pool.py)."""
        if not self.opened:
            raise ValueError("this judge was not opened by load_judge: no engine can be added")
        opened = dict(self.opened) | {"isolated": True}  # each in an engine worker process
        options = replace(opened.pop("options"), n_threads=1)
        found: list[Judge] = []
        try:
            for _ in range(count):
                found.append(load_judge(options=options, **opened))
        except BaseException:
            for judge in found:
                judge.close()
            raise
        for judge in found:
            judge.config = self.config
        return found

    @property
    def name(self) -> str:
        return self.loaded.name

    @property
    def entry(self) -> ModelEntry | None:
        """Its registry entry (None for a bare model file)."""
        return self.loaded.entry

    @property
    def backend(self) -> Backend:
        return self.loaded.backend

    @property
    def model_name(self) -> str:
        """The name its judgments carry (as the service's)."""
        return self.service.model_name

    def judge(
        self,
        item: JudgeItem | Mapping[str, Any],
        config: JudgeConfig | None = None,
        line: int | None = None,
        **changes: Any,
    ) -> Judgment:
        """One judgment of `item` (a JudgeItem, or a dict with question and answers), with
        this judge's settings, or `config` (a run's), and keyword `changes` over them."""
        if not isinstance(item, JudgeItem):
            try:
                item = JudgeItem.model_validate({"id": "item", **item})
            except ValueError as error:
                raise InputError(0, "", f"not a judge item: {error}") from None
        return self.service.judge(item, self._config(changes, config), line)

    def judge_rows(
        self,
        rows: Iterable[InputRow],
        config: JudgeConfig | None = None,
        engines: int = 1,
        **options: Any,
    ) -> Iterator[Judgment]:
        """One judgment per input row, in order, each given out as soon as it is done
        (`options`: the service's total, on_judgment, should_stop, window); `engines` > 1
        judges them with that many engines at once, this one and more of the same
        (app/batches/engine_pool.py), opened for the batch and closed after it."""
        if engines <= 1:
            return self.service.judge_rows(rows, config or self.config, **options)
        return self._pooled(rows, config or self.config, engines, options)

    def _pooled(
        self, rows: Iterable[InputRow], config: JudgeConfig, engines: int, options: Any
    ) -> Iterator[Judgment]:
        """`rows` judged by this engine and `engines - 1` more opened for them, in row order
        (`options` as the service's; its tally is the whole batch's)."""
        from app.batches.engine_pool import in_order
        from app.batches.tally import Tally

        more = self.more_engines(engines - 1)
        workers = [partial(Judge.judge_many, judge, config=config) for judge in (self, *more)]
        tally, on_judgment = Tally(total=options.get("total")), options.get("on_judgment")
        try:
            stream = in_order(workers, rows, options.get("should_stop"), options.get("window", 1))
            for judgment in stream:
                tally.add(judgment)
                if on_judgment is not None:
                    on_judgment(judgment, tally)
                yield judgment
        finally:
            for judge in more:
                judge.close()

    def judge_many(
        self, rows: Sequence[InputRow], config: JudgeConfig | None = None
    ) -> list[Judgment]:
        """Judgments of `rows`, in order; score mode reads all their calls in one batch."""
        return self.service.judge_many(rows, config or self.config)

    def judge_in_steps(
        self, item: JudgeItem, config: JudgeConfig | None = None
    ) -> Iterator[Judgment]:
        """A head's verdict first, then the whole judgment (app.judging.service)."""
        return self.service.judge_in_steps(item, config or self.config)

    def explain(
        self, item: JudgeItem, judgment: Judgment, config: JudgeConfig | None = None
    ) -> Judgment:
        """A critique of a judgment already made, its decision kept."""
        return self.service.explain(item, judgment, config or self.config)

    def score_requests(
        self, item: JudgeItem, config: JudgeConfig | None = None
    ) -> list[ScoreRequest]:
        """The score-mode reads judging `item` makes (to read them elsewhere first)."""
        return self.service.score_requests(item, config or self.config)

    def judge_file(
        self,
        source: str | Path,
        out: str | Path | None = None,
        engines: int | None = None,
        **changes: Any,
    ) -> list[Judgment]:
        """One judgment per row of a JSONL or JSON file (any layout the CLI reads), in
        order; written to `out` as JSONL when given. `engines`: how many judge it at once
        (default: one per usable core, as memory allows: app/batches/engine_pool.py)."""
        if engines is None:
            engines = self.default_engines()
        rows = read_rows(source)
        judgments = list(self.judge_rows(rows, self._config(changes), engines))
        if out is not None:
            write_jsonl(judgments, out)
        return judgments

    def default_engines(self) -> int:
        """Engines a batch of this judge gets by default: one per usable core, as memory
        allows (llama.cpp's engines); one for any other backend (a server's answers as fast
        as it can, transformers holds a GPU) or a judge not opened by load_judge."""
        from app.batches.engine_pool import default_engines

        if not self.opened or self.backend.name != "llama-cpp":
            return 1
        path = self.entry.path() if self.entry is not None else Path(str(self.opened["model"]))
        return default_engines(path)[0]

    def _config(self, changes: Mapping[str, Any], config: JudgeConfig | None = None) -> JudgeConfig:
        return with_changes(config or self.config, changes)

    def close(self) -> None:
        self.loaded.close()

    def __enter__(self) -> Judge:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def load_judge(
    model: str | None = None,
    *,
    threads: int | None = None,
    n_ctx: int = RUN_DEFAULTS.n_ctx,
    gpu_layers: int = 0,
    backend: str | None = None,
    options: BackendOptions | None = None,
    overrides: SettingsLayer | None = None,
    isolated: bool = False,
    **settings: Any,
) -> Judge:
    """Open `model` (a registry name, a .gguf file or a safetensors folder; None: the
    registry's default) with its registry settings, changed by `settings`.

    Every front end opens its judge here. `options` (every load and request option:
    a server's URL, parallel sequences...) replaces `threads`, `n_ctx` and
    `gpu_layers`; `overrides` is a user's layer of judging settings over the
    registry's (the CLI's flags: app.judging.arguments), merged as the CLI and the app
    merge them (app.judging.settings). `isolated`: llama.cpp runs in an engine worker process
    (models/backends/worker_backend.py), so a native crash raises EngineStopped instead of
    ending this process; the next call starts a fresh worker."""
    options = options or BackendOptions(n_ctx=n_ctx, n_threads=threads, n_gpu_layers=gpu_layers)
    loaded = open_judge(model, options, backend=backend, isolated=isolated)
    config = judge_config(loaded.entry, overrides, context_tokens=options.n_ctx)
    opened = {"model": model, "options": options, "backend": backend, "overrides": overrides}
    opened |= {"isolated": isolated, **settings}
    return Judge(loaded, with_changes(config, settings), opened)
