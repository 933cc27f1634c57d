"""Records that flow through the judge engine: what goes in and what comes out.

Every record is a frozen pydantic model, so a judgment can be serialised to a
JSONL row and read back unchanged. A judgment that could not be parsed keeps
its raw text and never carries an invented score.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.catalog.rubrics import Rubric

MAX_ANSWERS = 6
Winner = Literal["A", "B", "tie"]
# What a pairwise judgment reports: a winner, or "uncertain" when the judge's confidence is
# below its threshold (the judgment's `leaning` then says which way it leaned).
Verdict = Literal["A", "B", "tie", "uncertain"]
Mode = Literal["score", "generate"]


class Protocol(StrEnum):
    """How the answers of one item are judged."""

    SINGLE = "single"  # one answer graded 1-10
    PAIRWISE = "pairwise"  # two answers: A, B or tie
    MULTI = "multi"  # 2..6 answers ranked in one call (JudgeLM)
    ANCHORED = "anchored"  # one answer graded against the reference given full marks


class Status(StrEnum):
    OK = "ok"
    UNPARSED = "unparsed"  # the model answered, but not in a valid, consistent form
    ERROR = "error"  # the row could not be judged (bad input, backend failure)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Label(_Frozen):
    """A human or teacher label carried by an input row (used by meta-evaluation)."""

    winner: Winner | None = None
    score: float | None = None
    scale_max: float | None = None


class JudgeItem(_Frozen):
    """One thing to judge: a question with 1..6 answers.

    `rubric` is the row's own rubric (a Prometheus row carries one): it replaces the
    row's and the run's criteria, but not a rubric chosen for the run
    (app.catalog.criteria_resolution.resolve).
    """

    id: str
    question: str
    answers: tuple[str, ...]
    reference: str | None = None
    scenario: str | None = None
    criteria: tuple[str, ...] | None = None
    rubric: Rubric | None = None
    answer_models: tuple[str | None, ...] | None = None
    label: Label | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question is empty")
        return value

    @field_validator("answers")
    @classmethod
    def _answers_valid(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not 1 <= len(value) <= MAX_ANSWERS:
            raise ValueError(f"expected 1 to {MAX_ANSWERS} answers, got {len(value)}")
        for number, answer in enumerate(value, start=1):
            if not answer.strip():
                raise ValueError(f"answer {number} is empty")
        return value

    @field_validator("reference")
    @classmethod
    def _blank_reference_is_none(cls, value: str | None) -> str | None:
        return value if value and value.strip() else None

    @model_validator(mode="after")
    def _answer_models_match(self) -> JudgeItem:
        if self.answer_models is not None and len(self.answer_models) != len(self.answers):
            raise ValueError("answer_models must name one model per answer")
        return self


class AnswerScores(_Frozen):
    """Scores one answer received.

    `overall` is the weighted mean of the criterion scores (the first two
    criteria count double). `expected_*` are means over the model's own
    probability distribution on the score tokens, when the backend exposes it.
    """

    criteria: dict[
        str, float
    ]  # whole numbers, or halves when two orders are averaged; may be empty
    overall: float
    expected_criteria: dict[str, float] | None = None
    expected_overall: float | None = None
    overall_probs: dict[int, float] | None = None  # decision-first grades: P(each grade)


class Judgment(_Frozen):
    """The outcome of judging one input row. Exactly one per input row."""

    id: str
    protocol: Protocol | None  # None only for a row that failed before a protocol applied
    status: Status
    error: str | None = None
    winner: Verdict | None = None
    leaning: Winner | None = None  # pairwise: the winner the judge leans to, even when uncertain
    uncertain: bool | None = None  # pairwise, multi: confidence below the judge's threshold
    ranking: tuple[int, ...] | None = None  # 1-based answer numbers, best first
    answers: tuple[AnswerScores, ...] = ()  # empty when the criterion scores were not asked for
    feedback: str | None = None
    feedback_note: str | None = None  # why there is no critique although one was asked for
    reference_metrics: tuple[dict[str, float], ...] | None = None  # per answer, vs the reference
    # probability of the reported decision (see app.deciding.verdicts)
    confidence: float | None = None
    # how often verdicts of this confidence were right on training pairs
    # (app/deciding/calibration.py)
    calibrated_confidence: float | None = None
    # mean entropy (nats) of the judge's full next-token distribution where it decided: low
    # when it is sure; None without score distributions
    # (app.deciding.judgment_builder.decision_entropy)
    entropy: float | None = None
    verdict_probs: dict[str, float] | None = None  # pairwise: P(A), P(B), P(tie) over both orders
    consistent: bool | None = None  # pairwise with swap: did both orders agree?
    order_winners: tuple[Winner | None, Winner | None] | None = None  # swap: each order's verdict
    margin: float | None = None  # swap, calibrated: expected overall of A minus B over both orders
    # relevance join: the judge's own P(A) - P(B) and probabilities, and cos(request, A) minus
    # cos(request, B), from which the reported verdict and confidence were made
    relevance: dict[str, Any] | None = None
    # state head (app/deciding/state_judging.py): each signal's share of the score (states,
    # relevance, length, their sum), or each answer's utility for a ranking
    verdict_parts: dict[str, float] | None = None
    # a reference function (app/code_run/behaviour.py): the answers' functions run beside it
    # in the jail ({"function", "inputs", "shares", "notes": per answer, how its run went}),
    # or why they were not ({"unread": why, "fix": what to do})
    code_run: dict[str, Any] | None = None
    # a pair judged without a reference: the judge's own answer to the request, read in the
    # reference's place (app/deciding/own_answer.py), {"text", "mean_logprob", "tokens",
    # "finished"}; None: it wrote none
    own_answer: dict[str, Any] | None = None
    # a state head's judgment with criterion scores: the decision those scores give on their
    # own (pairwise verdict, or multi ranking), and why there are none when they failed
    criteria_verdict: Verdict | None = None
    criteria_ranking: tuple[int, ...] | None = None
    criteria_note: str | None = None
    # the criterion scores are the judge's criterion head's (app/deciding/criterion_head.py:
    # from the verdict's read of each answer), not a read of their own; None: read, or none
    criteria_by_head: bool | None = None
    # a cascaded run (app/judging/cascade.py): which judge decided, and what the first one said
    cascade: dict[str, Any] | None = None
    # the answers' overall grades are on this scale (lowest, highest) when the template grades
    # on its own (native formats: Prometheus 1-5, JudgeLM / Auto-J / EasyJudge 1-10); None: the
    # scale of the criteria or rubric the judgment names (app.reports.leaderboard.grade_scale)
    overall_scale: tuple[int, int] | None = None
    truncated: bool = False  # a text was cut from the middle to fit the model's context
    mode: Mode | None = None  # score: decision read from probabilities; generate: full reply
    swapped: bool = False
    raw_output: str | None = None
    raw_output_swapped: str | None = None
    scenario: str | None = None
    # scenario "auto" on a row naming none: the classifier's top guesses, best first
    # (app/catalog/scenario_detection.py); `scenario` is the first, or default when it is unsure
    scenario_guesses: dict[str, float] | None = None
    criteria: tuple[str, ...] = ()
    model: str | None = None
    template: str | None = None
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    line: int | None = None  # 1-based line (JSONL) or array index + 1 (JSON) of the input row
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _ok_has_scores(self) -> Judgment:
        decided = self.answers or self.winner is not None or self.ranking is not None
        if self.status is Status.OK and not decided:
            raise ValueError("an ok judgment needs scores or a decision")
        if self.status is not Status.OK and self.answers:
            raise ValueError("only an ok judgment carries scores")
        return self


BACKEND_FAILED = "backend failed: "  # how an error row caused by the backend begins


def backend_failed(judgment: Judgment) -> bool:
    """Whether a row failed because the backend did (not because of the row itself)."""
    return judgment.status is Status.ERROR and (judgment.error or "").startswith(BACKEND_FAILED)
