"""What a judge's model card says it measured, for the app to show beside its verdicts.

A model card (Markdown, under models/) may start with YAML front matter:

    ---
    measured:
      - file: pairwise_dev.jsonl      # labelled rows the judge never trained on
        rows: 290
        judge: 37.9                   # % agreement with the labels
        longer_answer_wins: 53.4      # the length heuristic on the same rows
        coin_flip: 35.2               # a fair coin between the answers (optional)
        how: score mode, both orders, position-calibrated
    ---

The registry entry's `card` names the file. Errors name the file and field.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from models.foundation.datafiles import validate
from models.foundation.errors import ConfigError
from models.registry import MODELS_DIR, ModelEntry


class MeasuredRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    rows: int = Field(ge=1)
    judge: float = Field(ge=0, le=100)
    longer_answer_wins: float = Field(ge=0, le=100)
    # What a fair coin between the two answers agrees on (half the rows with a winner):
    # 50 where labels never tie. None: not on record.
    coin_flip: float | None = Field(default=None, ge=0, le=100)
    how: str = ""

    @property
    def no_better_than_length(self) -> bool:
        """The judge agrees with people no more often than picking the longer answer."""
        return self.judge <= self.longer_answer_wins

    @property
    def below_coin_flip(self) -> bool:
        """The judge agrees with people less often than tossing a coin between the answers."""
        return self.coin_flip is not None and self.judge < self.coin_flip


class CardFacts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    measured: tuple[MeasuredRow, ...] = ()


def read_card(path: Path) -> CardFacts:
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return CardFacts()
    end = text.find("\n---", 4)
    if end == -1:
        raise ConfigError(path, "front matter", "opened with '---' but never closed")
    try:
        data = yaml.safe_load(text[4:end]) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(path, "front matter", f"invalid YAML: {exc}") from exc
    return validate(CardFacts, data, path)


def untrained_note(entry: ModelEntry, models_dir: Path = MODELS_DIR) -> str:
    """What to tell a user about a model that was not trained for judging: its measured
    agreement where its card has some (an instruction-tuned base may carry signal asked
    zero-shot), else that its scores are close to chance."""
    measured = card_facts(entry, models_dir).measured
    if not measured:
        return "not trained for judging: its scores are close to chance."
    figures = "; ".join(
        f"{row.file} {row.judge:.1f} % (the longer answer: {row.longer_answer_wins:.1f} %)"
        for row in measured
    )
    return f"not trained for judging, asked zero-shot; agreement with people measured: {figures}."


@cache
def card_facts(entry: ModelEntry, models_dir: Path = MODELS_DIR) -> CardFacts:
    """The measured figures of an entry's model card (none when it names no card)."""
    if entry.card is None:
        return CardFacts()
    path = models_dir / entry.card
    if not path.is_file():
        raise ConfigError(models_dir / "registry.yaml", f"{entry.name}.card", f"{path} not found")
    return read_card(path)
