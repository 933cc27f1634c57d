"""Prompt templates: a registry of template families loaded from data files.

A template renders role messages for one protocol. Quoted material (the
request, the answers, the reference) is fenced between markers that carry a
nonce derived from the whole item, so an answer cannot close its own fence and
speak as the instructions: it would have to contain a hash of itself.

A template also names its reply format (app/formats/native_formats.py): PocketJudge's
JSON, or the native free-text format of another judge model (JudgeLM, PandaLM,
Auto-J, Prometheus, EasyJudge). Native templates keep the section markers that
model was fine-tuned on, exactly, and cannot use nonce fences.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import jinja2
from pydantic import BaseModel, ConfigDict, model_validator

from app.catalog.criteria_types import CriterionSpec
from app.catalog.scenarios import Scenario
from app.catalog.scoring import ScoringRule
from app.formats.native_formats import JSON_FORMAT, ReplyFormat, native_format
from app.records import Protocol
from models.backends.base import Message
from models.foundation.datafiles import FieldError, read_mapping, validate
from models.foundation.errors import ConfigError, UnknownNameError

TEMPLATES_DIR = Path(__file__).parent / "prompt_templates"
DEFAULT_TEMPLATE = "pocketjudge"


class TemplateFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    # decision_first: the reply starts with the verdict, grade or ranking (score mode reads
    # it from one forward pass); decision_last: the scores first, the decision from them.
    layout: Literal["decision_last", "decision_first"] = "decision_last"
    # pocketjudge: a JSON reply (grammar-constrained); else a judge model's native free text
    reply_format: ReplyFormat = JSON_FORMAT
    stop: tuple[str, ...] = ()  # generation stops at these (e.g. where a native reply goes on)
    system: str  # may be empty: no system message (models trained without one)
    protocols: dict[Protocol, str]
    partials: dict[str, str] = {}

    @model_validator(mode="after")
    def _native_format_reads_every_protocol(self) -> TemplateFile:
        if self.reply_format == JSON_FORMAT:
            return self
        readable = native_format(self.reply_format).parsers
        for protocol in self.protocols:
            if protocol not in readable:
                valid = ", ".join(p.value for p in readable)
                raise FieldError(
                    f"protocols.{protocol.value}",
                    f"the {self.reply_format} reply format has no parser for "
                    f"{protocol.value}; it reads: {valid}",
                )
        return self


@dataclass(frozen=True)
class AnswerSlot:
    label: str
    text: str


@dataclass(frozen=True)
class PromptInput:
    """What a template needs, already resolved (order of answers included)."""

    protocol: Protocol
    question: str
    answers: tuple[AnswerSlot, ...]
    rule: ScoringRule
    reference: str | None = None
    scenario: Scenario | None = None


class PromptTemplate:
    def __init__(self, spec: TemplateFile, path: Path) -> None:
        self.name = spec.name
        self.description = spec.description
        self.decision_first = spec.layout == "decision_first"
        self.reply_format = spec.reply_format
        self.stop = spec.stop
        self.path = path
        self.protocols = tuple(spec.protocols)
        environment = jinja2.Environment(
            loader=jinja2.DictLoader(dict(spec.partials)),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            autoescape=False,
        )
        try:
            self._system = environment.from_string(spec.system)
            self._user = {
                protocol: environment.from_string(text) for protocol, text in spec.protocols.items()
            }
        except jinja2.TemplateSyntaxError as exc:
            raise ConfigError(path, f"line {exc.lineno}", f"template syntax error: {exc}") from exc

    @property
    def native(self) -> bool:
        """True when the reply is another judge model's free text, not PocketJudge's JSON."""
        return self.reply_format != JSON_FORMAT

    def check_protocol(self, protocol: Protocol) -> None:
        """Raise UnknownNameError (listing the valid ones) unless this template has `protocol`."""
        if protocol not in self._user:
            raise UnknownNameError(
                f"protocol of template '{self.name}'", protocol.value, self._valid()
            )

    def render(self, data: PromptInput) -> list[Message]:
        self.check_protocol(data.protocol)
        context = _context(data)
        try:
            system = squeeze_blank_lines(self._system.render(context).strip())
            user = self._user[data.protocol].render(context).strip()
        except jinja2.TemplateError as exc:
            raise ConfigError(self.path, data.protocol.value, f"template failed: {exc}") from exc
        messages = [Message("system", system)] if system else []
        return [*messages, Message("user", squeeze_blank_lines(user))]

    def _valid(self) -> list[str]:
        return [p.value for p in self.protocols]


def _context(data: PromptInput) -> dict[str, Any]:
    low, high = data.rule.overall_range
    # Sorted answers: both orders of a pair get the same nonce, so the request fenced with
    # it is the same text in both prompts and its evaluation is reused for the second.
    nonce = nonce_of([data.question, data.reference or "", *sorted(a.text for a in data.answers)])
    return {
        "protocol": data.protocol.value,
        "question": data.question,
        "answers": [{"label": a.label, "text": a.text} for a in data.answers],
        "reference": data.reference,
        "scenario": (
            {"name": data.scenario.name, "description": data.scenario.description}
            if data.scenario
            else None
        ),
        "criteria": [_criterion_context(spec) for spec in data.rule.specs],
        "overall_rule": data.rule.describe(),
        "overall_min": low,
        "overall_max": high,
        "fence": lambda tag, text: fence(tag, text, nonce),
    }


def _criterion_context(spec: CriterionSpec) -> dict[str, Any]:
    return {
        "key": spec.key,
        "name": spec.name,
        "description": spec.description,
        "scale_min": spec.scale_min,
        "scale_max": spec.scale_max,
        "levels": dict(spec.levels),
        "score_levels": _levels_by_score(spec),
    }


def _levels_by_score(spec: CriterionSpec) -> dict[int, str]:
    """The level description of each score on the criterion's scale that has one (level
    keys are scores like '5' or ranges like '3-4'), for prompts that list every score."""
    by_score: dict[int, str] = {}
    for key, text in spec.levels.items():
        low, _, high = str(key).partition("-")
        try:
            scores = range(int(low), int(high or low) + 1)
        except ValueError:
            continue
        by_score.update(dict.fromkeys(scores, text))
    return by_score


def nonce_of(texts: Sequence[str]) -> str:
    """The fences' nonce: a hash of the quoted texts, so an answer cannot close its fence."""
    digest = hashlib.sha256("\x1f".join(texts).encode("utf-8", errors="replace"))
    return digest.hexdigest()[:8]


def fence(tag: str, text: str, nonce: str) -> str:
    return f"[[{tag} {nonce}]]\n{text.strip()}\n[[/{tag} {nonce}]]"


def squeeze_blank_lines(text: str) -> str:
    """`text` with runs of blank lines made one and each line's trailing spaces cut (how
    every rendered prompt is tidied)."""
    lines: list[str] = []
    for line in text.splitlines():
        if not line.strip() and lines and not lines[-1].strip():
            continue
        lines.append(line.rstrip())
    return "\n".join(lines)


@cache
def _registry(root: Path) -> dict[str, PromptTemplate]:
    templates: dict[str, PromptTemplate] = {}
    for path in sorted(root.glob("*.yaml")):
        template = load_template_file(path)
        if template.name in templates:
            raise ConfigError(path, "name", f"template '{template.name}' is defined twice")
        templates[template.name] = template
    return templates


def load_template_file(path: Path) -> PromptTemplate:
    return PromptTemplate(validate(TemplateFile, read_mapping(path), path), path)


def template_names(root: Path = TEMPLATES_DIR) -> list[str]:
    return sorted(_registry(root))


def get_template(name: str = DEFAULT_TEMPLATE, root: Path = TEMPLATES_DIR) -> PromptTemplate:
    registry = _registry(root)
    if name not in registry:
        raise UnknownNameError("template", name, list(registry))
    return registry[name]
