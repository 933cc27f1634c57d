"""The JSON a judge writes, as a JSON schema and as value rules.

Two reply layouts (criterion keys come from the scoring rule).

Decision last (templates `pocketjudge`, `pocketjudge-compact`):

- single / anchored: {"scores": {key: n}, "overall": n, "feedback": "..."}
- pairwise: {"scores": {"A": {...}, "B": {...}}, "overall": {"A": n, "B": n},
  "verdict": "A" | "B" | "tie", "feedback": "..."}
- multi: {"scores": {"1": {...}, ...}, "overall": {"1": n, ...},
  "ranking": [n, ...], "feedback": "..."}

Decision first (templates `pocketjudge-decision*`): the decision is the first
value, so its probabilities are read from one forward pass over the prompt:

- single / anchored: {"overall": n, "scores": {key: n}, "feedback": "..."}
- pairwise: {"verdict": "A" | "B" | "tie", "scores": {"A": {...}, "B": {...}}, "feedback": "..."}
- multi: {"ranking": [n, ...], "scores": {"1": {...}, ...}, "feedback": "..."}

`ReplyLayout` also says which parts are asked for: score mode stops before the
feedback, and a decision-first reply may leave out the criterion scores.

The schema guarantees the shape and the ranges (llama.cpp turns it into a
grammar). The value rules, for backends that decode step by step, add what a
schema cannot say. Decision last: the overall is the rounded weighted mean of
the scores just written, and the verdict or ranking follows from the overalls.
Decision first: each criterion score is kept to values with which the scores
can still agree with the decision already written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.catalog.scoring import (
    ScoringRule,
    ranking_from_overall,
    ranking_reachable,
    reachable_overalls,
    verdict_from_overall,
    verdict_reachable,
)
from app.records import Protocol
from models.backends.base import JsonPath, OutputSpec, ValueRule

FEEDBACK_MAX_CHARS = 400
VERDICTS = ("A", "B", "tie")


@dataclass(frozen=True)
class ReplyLayout:
    """Which reply layout a template uses, and which of its parts are asked for.

    A decision-last reply derives its decision from the criterion scores, so it
    always has them; `criteria=False` applies to decision-first replies only.
    """

    decision_first: bool = False
    criteria: bool = True
    feedback: bool = True


def decision_path(protocol: Protocol, layout: ReplyLayout) -> JsonPath | None:
    """Where a decision-first reply writes its decision (None for decision last)."""
    if not layout.decision_first:
        return None
    if protocol is Protocol.PAIRWISE:
        return ("verdict",)
    if protocol is Protocol.MULTI:
        return ("ranking", 0)
    return ("overall",)


def answer_keys(protocol: Protocol, n_answers: int) -> tuple[str, ...]:
    """Keys that name the answers in the output; empty for one-answer protocols."""
    if protocol is Protocol.PAIRWISE:
        return ("A", "B")
    if protocol is Protocol.MULTI:
        return tuple(str(i) for i in range(1, n_answers + 1))
    return ()


def _integer(low: int, high: int) -> dict[str, Any]:
    return {"type": "integer", "enum": list(range(low, high + 1))}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def json_schema(
    protocol: Protocol, rule: ScoringRule, n_answers: int, layout: ReplyLayout = ReplyLayout()
) -> dict[str, Any]:
    scores = _object({s.key: _integer(s.scale_min, s.scale_max) for s in rule.specs})
    overall = _integer(*rule.overall_range)
    keys = answer_keys(protocol, n_answers)
    properties: dict[str, Any] = {}
    if layout.decision_first:
        properties[_decision_key(protocol)] = _decision_schema(protocol, overall, n_answers)
        if layout.criteria:
            properties["scores"] = _object({key: scores for key in keys}) if keys else scores
    elif not keys:
        properties = {"scores": scores, "overall": overall}
    else:
        properties["scores"] = _object({key: scores for key in keys})
        properties["overall"] = _object({key: overall for key in keys})
        properties[_decision_key(protocol)] = _decision_schema(protocol, overall, n_answers)
    if layout.feedback:
        properties["feedback"] = {"type": "string", "maxLength": FEEDBACK_MAX_CHARS}
    return _object(properties)


def _decision_key(protocol: Protocol) -> str:
    return {Protocol.PAIRWISE: "verdict", Protocol.MULTI: "ranking"}.get(protocol, "overall")


def _decision_schema(protocol: Protocol, overall: dict[str, Any], n_answers: int) -> dict[str, Any]:
    if protocol is Protocol.PAIRWISE:
        return {"type": "string", "enum": list(VERDICTS)}
    if protocol is Protocol.MULTI:
        return {
            "type": "array",
            "items": _integer(1, n_answers),
            "minItems": n_answers,
            "maxItems": n_answers,
        }
    return overall


class _JudgeRules:
    """What both layouts' rules constrain: every value position of the judgment."""

    def constrains(self, path: JsonPath) -> bool:
        return bool(path) and path[0] in ("scores", "overall", "verdict", "ranking")


@dataclass(frozen=True)
class JudgeValueRules(_JudgeRules):
    """Value rules for the layouts above (see models.backends.base.ValueRules)."""

    protocol: Protocol
    rule: ScoringRule
    keys: tuple[str, ...]

    def rule_for(self, path: JsonPath, done: Mapping[JsonPath, Any]) -> ValueRule | None:
        if not path:
            return None
        head = path[0]
        if head == "scores" and len(path) == (3 if self.keys else 2):
            spec = self._spec(str(path[-1]))
            if spec is None:
                return None
            return ValueRule(_numbers(spec.scale_min, spec.scale_max))
        if head == "overall" and len(path) == (2 if self.keys else 1):
            target = self._overall(path[1:], done)
            if target is None:
                return None
            return ValueRule(_numbers(*self.rule.overall_range), (str(target),), record=False)
        if head == "verdict" and len(path) == 1 and self.protocol is Protocol.PAIRWISE:
            overall = [done.get(("overall", key)) for key in self.keys]
            if None in overall:
                return None
            verdict = verdict_from_overall(overall[0], overall[1])
            return ValueRule(tuple(f'"{v}"' for v in VERDICTS), (f'"{verdict}"',))
        if head == "ranking" and len(path) == 2 and isinstance(path[1], int):
            return self._ranking_rule(path[1], done)
        return None

    def _spec(self, key: str) -> Any:
        return next((spec for spec in self.rule.specs if spec.key == key), None)

    def _overall(self, answer: tuple[str | int, ...], done: Mapping[JsonPath, Any]) -> int | None:
        scores = {}
        for spec in self.rule.specs:
            value = done.get(("scores", *answer, spec.key))
            if not isinstance(value, int):
                return None
            scores[spec.key] = value
        return self.rule.rounded_overall(scores)

    def _ranking_rule(self, position: int, done: Mapping[JsonPath, Any]) -> ValueRule | None:
        overall = [done.get(("overall", key)) for key in self.keys]
        if None in overall:
            return None
        placed = {done.get(("ranking", i)) for i in range(position)}
        for group in ranking_from_overall(overall):  # type: ignore[arg-type]
            remaining = [n for n in group if n not in placed]
            if remaining:
                allowed = tuple(str(n) for n in remaining)
                return ValueRule(_numbers(1, len(self.keys)), allowed, record=False)
        return None


@dataclass(frozen=True)
class DecisionFirstRules(_JudgeRules):
    """Value rules of decision-first replies (see models.backends.base.ValueRules).

    The decision's candidates are recorded (their probabilities are the judgment's);
    every criterion score is recorded too, but may only take values with which the
    answer's overall can still agree with the decision written before it.
    """

    protocol: Protocol
    rule: ScoringRule
    keys: tuple[str, ...]
    n_answers: int
    forced: str | tuple[int, ...] | None = None

    def rule_for(self, path: JsonPath, done: Mapping[JsonPath, Any]) -> ValueRule | None:
        if not path:
            return None
        head = path[0]
        if head == "verdict" and len(path) == 1 and self.protocol is Protocol.PAIRWISE:
            candidates = tuple(f'"{v}"' for v in VERDICTS)
            allowed = None if self.forced is None else (f'"{self.forced}"',)
            return ValueRule(candidates, allowed)
        if head == "overall" and len(path) == 1 and not self.keys:
            allowed = None if self.forced is None else (str(self.forced),)
            return ValueRule(_numbers(*self.rule.overall_range), allowed)
        if head == "ranking" and len(path) == 2 and isinstance(path[1], int):
            return self._ranking_rule(path[1], done)
        if head == "scores" and len(path) == (3 if self.keys else 2):
            return self._score_rule(path, done)
        return None

    def _ranking_rule(self, position: int, done: Mapping[JsonPath, Any]) -> ValueRule:
        numbers = _numbers(1, self.n_answers)
        if isinstance(self.forced, tuple):
            return ValueRule(numbers, (str(self.forced[position]),), record=position == 0)
        placed = {str(done.get(("ranking", i))) for i in range(position)}
        allowed = tuple(n for n in numbers if n not in placed)
        return ValueRule(numbers, allowed, record=position == 0)

    def _score_rule(self, path: JsonPath, done: Mapping[JsonPath, Any]) -> ValueRule | None:
        spec = next((s for s in self.rule.specs if s.key == str(path[-1])), None)
        if spec is None:
            return None
        candidates = _numbers(spec.scale_min, spec.scale_max)
        answer = path[1:-1]
        allowed = tuple(
            value for value in candidates if self._still_agrees(done, answer, spec.key, int(value))
        )
        return ValueRule(candidates, allowed or None)

    def _still_agrees(
        self, done: Mapping[JsonPath, Any], answer: JsonPath, key: str, value: int
    ) -> bool:
        """Can the decision in `done` still follow from the scores with `key` = `value`?"""
        reachable = []
        for answer_key in self.keys or ("",):
            current = (answer_key,) if self.keys else ()
            fixed = {
                spec.key: done[("scores", *current, spec.key)]
                for spec in self.rule.specs
                if isinstance(done.get(("scores", *current, spec.key)), int)
            }
            if current == answer:
                fixed[key] = value
            reachable.append(reachable_overalls(self.rule, fixed))
        if self.protocol is Protocol.PAIRWISE:
            verdict = done.get(("verdict",))
            return verdict not in VERDICTS or verdict_reachable(*reachable, verdict)
        if self.protocol is Protocol.MULTI:
            ranking = [done.get(("ranking", i)) for i in range(self.n_answers)]
            if not all(isinstance(n, int) for n in ranking):
                return True
            return ranking_reachable(reachable, ranking)  # type: ignore[arg-type]
        grade = done.get(("overall",))
        return not isinstance(grade, int) or grade in reachable[0]


def _numbers(low: int, high: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(low, high + 1))


def output_spec(
    protocol: Protocol,
    rule: ScoringRule,
    n_answers: int,
    layout: ReplyLayout = ReplyLayout(),
    forced_decision: str | tuple[int, ...] | None = None,
) -> OutputSpec:
    """Schema and value rules of a reply. `forced_decision` (decision first only) fixes
    the decision, e.g. to explain a verdict already reached from both orders."""
    keys = answer_keys(protocol, n_answers)
    rules: JudgeValueRules | DecisionFirstRules
    if layout.decision_first:
        rules = DecisionFirstRules(protocol, rule, keys, n_answers, forced_decision)
    else:
        rules = JudgeValueRules(protocol, rule, keys)
    return OutputSpec(json_schema=json_schema(protocol, rule, n_answers, layout), value_rules=rules)
