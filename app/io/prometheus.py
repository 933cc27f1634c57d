"""Prometheus "absolute grading" rows read back into a question, an answer and a rubric.

Prometheus data (Kim et al. 2023, arXiv:2310.08491; the prometheus-eval sets such as
`vicuna_eval.json`, the Feedback Collection) ships each row as the whole prompt the model
was trained on, with the parts under fixed `###` headers:

    ###The instruction to evaluate:   the question
    ###Response to evaluate:          the answer to grade
    ###Reference Answer (Score 5):    a reference (absent in the no-reference variant)
    ###Score Rubrics:                 "[criterion]" then "Score 1: ..." .. "Score 5: ..."
    ###Feedback:                      where the judge writes (empty)

Its rubric becomes a one-criterion `Rubric` graded 1-5, so the row is judged on its own
rubric whatever template judges it. This module only parses text; the layout
(app/io/layouts/prometheus.py) turns its `PromptError` into an InputError naming the row's field.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

from app.catalog.rubrics import Rubric, RubricCriterion

SCALE = (1, 5)
RUBRIC_ID = "prometheus"
CRITERION_ID = "rubric"
NAME_WIDTH = 60  # a criterion's name is its text cut to this many characters

QUESTION = "###The instruction to evaluate:"
RESPONSE = "###Response to evaluate:"
REFERENCE = "###Reference Answer (Score 5):"
RUBRIC = "###Score Rubrics:"
FEEDBACK = "###Feedback:"
REQUIRED = (QUESTION, RESPONSE, RUBRIC)  # the reference is optional

# A header starts a line; the reference header also appears without "(Score 5)".
_HEADER = re.compile(
    r"^###(?:The instruction to evaluate|Response to evaluate|Reference Answer[^\n:]*"
    r"|Score Rubrics|Feedback|Task Description):",
    re.MULTILINE,
)
_LEVEL = re.compile(r"^\s*Score\s+(\d+)\s*[:.]\s*(.*)$", re.IGNORECASE)


class PromptError(ValueError):
    """The prompt (or a rubric part) is not in the Prometheus form; the message says why."""


@dataclass(frozen=True)
class PrometheusPrompt:
    question: str
    response: str
    reference: str | None
    rubric: Rubric


def is_prompt(text: object) -> bool:
    """Whether `text` looks like a Prometheus absolute-grading prompt (layout detection).

    One of the required headers is enough, so that a prompt missing a section is still
    read as one and its error names the missing section (no other layout's text has them).
    """
    return isinstance(text, str) and any(header in text for header in REQUIRED)


def split_prompt(text: str) -> PrometheusPrompt:
    """The parts of one absolute-grading prompt; raises PromptError naming what is missing."""
    sections = _sections(text.replace("\r\n", "\n"))
    for header in REQUIRED:
        if header not in sections:
            raise PromptError(
                f"the Prometheus prompt has no '{header}' section; a Prometheus row's "
                f"instruction needs {', '.join(repr(h) for h in REQUIRED)}, each header at "
                "the start of a line"
            )
    question, response = sections[QUESTION], sections[RESPONSE]
    for header, body in ((QUESTION, question), (RESPONSE, response)):
        if not body:
            raise PromptError(f"the '{header}' section of the Prometheus prompt is empty")
    criterion, levels = split_rubric(sections[RUBRIC])
    return PrometheusPrompt(
        question=question,
        response=response,
        reference=sections.get(REFERENCE) or None,
        rubric=make_rubric(criterion, levels),
    )


def split_rubric(block: str) -> tuple[str, dict[int, str]]:
    """`[criterion]` and the `Score N: ...` lines under it (a level may run over lines)."""
    lines = [line.strip() for line in block.strip().split("\n")]
    if not lines or not lines[0] or _LEVEL.match(lines[0]):
        raise PromptError(
            f"the '{RUBRIC}' section does not start with the criterion in brackets "
            "('[Is the response ...?]')"
        )
    criterion = strip_brackets(lines[0])
    levels: dict[int, str] = {}
    current: int | None = None
    for line in lines[1:]:
        match = _LEVEL.match(line)
        if match:
            current = int(match.group(1))
            if current in levels:
                raise PromptError(f"the '{RUBRIC}' section gives 'Score {current}:' twice")
            levels[current] = match.group(2).strip()
        elif line and current is not None:
            levels[current] = f"{levels[current]} {line}".strip()
        elif line:
            raise PromptError(
                f"the '{RUBRIC}' section has text between the criterion and 'Score 1:': "
                f"{textwrap.shorten(line, NAME_WIDTH)!r}"
            )
    return criterion, levels


def make_rubric(criterion: str, levels: Mapping[int, str]) -> Rubric:
    """A one-criterion rubric graded 1-5 from a Prometheus criterion and its five levels."""
    criterion = strip_brackets(criterion)
    if not criterion:
        raise PromptError("the rubric's criterion is empty")
    low, high = SCALE
    for score in range(low, high + 1):
        if not levels.get(score, "").strip():
            raise PromptError(f"the rubric has no description for score {score} ('Score {score}:')")
    extra = sorted(set(levels) - set(range(low, high + 1)))
    if extra:
        raise PromptError(f"the rubric grades {low}-{high}, but gives score {extra[0]}")
    name = textwrap.shorten(criterion, NAME_WIDTH, placeholder="...")
    return Rubric(
        id=RUBRIC_ID,
        name="Prometheus score rubric",
        description=criterion,
        criteria=(
            RubricCriterion(
                id=CRITERION_ID,
                name=name,
                description=criterion,
                scale_min=low,
                scale_max=high,
                levels={str(score): levels[score].strip() for score in range(low, high + 1)},
            ),
        ),
    )


def strip_brackets(text: str) -> str:
    """'[Is it helpful?]' -> 'Is it helpful?' (Prometheus writes its criterion in brackets)."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    return text


def _sections(text: str) -> dict[str, str]:
    """Header -> its text (up to the next header), the first of each header; the reference
    header is stored as REFERENCE whatever its wording."""
    found = list(_HEADER.finditer(text))
    sections: dict[str, str] = {}
    for index, match in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(text)
        header = REFERENCE if match.group().startswith("###Reference") else match.group()
        sections.setdefault(header, text[match.end() : end].strip())
    return sections
