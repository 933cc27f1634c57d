"""A terminal progress bar (count, rate, ETA, status counts) for batch judging."""

from __future__ import annotations

import sys
from types import TracebackType

from tqdm import tqdm

from app.batches.tally import Tally
from app.records import Judgment


class ProgressBar:
    def __init__(self, total: int | None, disable: bool = False, initial: int = 0) -> None:
        self._bar = tqdm(
            total=total,
            initial=initial,  # rows an earlier run of the same command already judged
            unit="row",
            desc="judging",
            file=sys.stderr,
            disable=disable,
            dynamic_ncols=True,
        )

    def update(self, judgment: Judgment, progress: Tally) -> None:
        self._bar.set_postfix(
            ok=progress.ok, unparsed=progress.unparsed, error=progress.errors, refresh=False
        )
        self._bar.update(1)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._bar.close()
