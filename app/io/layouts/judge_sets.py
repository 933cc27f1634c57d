"""The layouts of other judges' datasets: JudgeLM, PandaLM, Auto-J (pairwise and single)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.io.layouts.fields import (
    ANSWER_BODY,
    AUTOJ_SINGLE_SCALE,
    RATING,
    Fields,
    to_choice,
    to_number,
    type_name,
    winner_from_scores,
)
from app.records import MAX_ANSWERS, Label


def map_judgelm(fields: Fields) -> dict[str, Any]:
    question = fields.text("question_body", what="the question")
    fields.sources["question"] = "question_body"
    count = _judgelm_answer_count(fields.row)
    answers = tuple(fields.answer(f"answer{n}_body") for n in range(1, count + 1))
    return {
        "question": question,
        "answers": answers,
        "reference": fields.reference(),
        "answer_models": _judgelm_models(fields, count),
        "label": _judgelm_label(fields, count),
    }


def _judgelm_answer_count(row: Mapping[str, Any]) -> int:
    """Answers run from answer1_body up to the highest answerN_body present (at least 2)."""
    numbers = [int(m.group(1)) for key in row if (m := ANSWER_BODY.match(str(key)))]
    return min(max([2, *numbers]), MAX_ANSWERS)


def _judgelm_models(fields: Fields, count: int) -> tuple[str | None, ...] | None:
    keys = [f"answer{n}_model_id" for n in range(1, count + 1)]
    if not any(fields.has(key) for key in keys):
        return None
    return tuple(None if (v := fields.take(key)) is None else str(v) for key in keys)


def _judgelm_label(fields: Fields, count: int) -> Label | None:
    """`score` = [s1, s2]: the higher score wins. Left in metadata (the margin matters)."""
    value = fields.row.get("score")
    if value is None:
        return None
    scores = [to_number(s) for s in value] if isinstance(value, (list, tuple)) else []
    if len(scores) != count or any(s is None for s in scores):
        raise fields.error("score", f"expected a list of {count} numbers, one per answer")
    if count != 2:
        return None
    return Label(winner=winner_from_scores(scores[0], scores[1]))


def map_pandalm(fields: Fields) -> dict[str, Any]:
    return {
        "question": fields.instruction_question(),
        "answers": (fields.answer("response1"), fields.answer("response2")),
        "reference": fields.reference(),
        "label": _pandalm_label(fields),
    }


def _pandalm_label(fields: Fields) -> Label | None:
    """Majority of annotator1..3 (0 = tie, 1, 2); no majority is a tie. Votes stay in metadata."""
    votes: list[int] = []
    for key in ("annotator1", "annotator2", "annotator3"):
        value = fields.row.get(key)
        if value is None:
            continue
        vote = to_choice(value, (0, 1, 2))
        if vote is None:
            raise fields.error(key, f"expected 0 (tie), 1 or 2, got {value!r}")
        votes.append(vote)
    if not votes:
        return None
    top = max((0, 1, 2), key=votes.count)
    if votes.count(top) * 2 <= len(votes):
        top = 0
    return Label(winner={0: "tie", 1: "A", 2: "B"}[top])


def map_autoj_pairwise(fields: Fields) -> dict[str, Any]:
    question = fields.text("prompt", what="the user's query")
    fields.sources["question"] = "prompt"
    answers = (fields.answer("response 1"), fields.answer("response 2"))
    label = None
    if fields.has("label"):
        code = to_choice(fields.take("label"), (0, 1, 2))
        if code is None:
            raise fields.error(
                "label", "expected 0 (response 1 better), 1 (response 2 better) or 2 (tie)"
            )
        label = Label(winner={0: "A", 1: "B", 2: "tie"}[code])
    return {
        "question": question,
        "answers": answers,
        "reference": fields.reference(),
        "scenario": fields.scenario(),
        "label": label,
    }


def map_autoj_single(fields: Fields) -> dict[str, Any]:
    query, response = _split_autoj_prompt(fields, fields.take("usrmsg"))
    return {
        "question": query,
        "answers": (response,),
        "reference": fields.reference(),
        "scenario": fields.scenario(),
        "label": _autoj_single_label(fields),
    }


def _split_autoj_prompt(fields: Fields, message: Any) -> tuple[str, str]:
    """Extract the `[Query]:` and `[Response]:` sections of an Auto-J single prompt."""
    if not isinstance(message, str):
        raise fields.error("usrmsg", f"expected a string, got {type_name(message)}")
    text = message.replace("\r\n", "\n")
    query_at = text.find("[Query]:")
    response_at = text.find("[Response]:", max(query_at, 0))
    if query_at < 0 or response_at < 0:
        raise fields.error(
            "usrmsg",
            "could not find the '[Query]:' and '[Response]:' sections of the Auto-J prompt",
        )
    end = text.rfind("[END DATA]")
    end = end if end > response_at else len(text)
    query = _strip_separator(text[query_at + len("[Query]:") : response_at])
    response = _strip_separator(text[response_at + len("[Response]:") : end])
    if not query:
        raise fields.error("usrmsg", "the '[Query]:' section is empty; the row has no question")
    if not response:
        raise fields.error(
            "usrmsg", "the '[Response]:' section is empty; there is nothing to judge"
        )
    return query, response


def _strip_separator(section: str) -> str:
    section = section.strip()
    return section[:-3].strip() if section.endswith("***") else section


def _autoj_single_label(fields: Fields) -> Label | None:
    """`pred_score` (1-10), else the `Rating: [[N]]` that ends `target_output`."""
    if fields.has("pred_score"):
        value = fields.take("pred_score")
        score = to_number(value)
        if score is None:
            raise fields.error("pred_score", f"expected a number, got {type_name(value)}")
        return Label(score=score, scale_max=AUTOJ_SINGLE_SCALE)
    critique = fields.row.get("target_output")
    found = RATING.findall(critique) if isinstance(critique, str) else []
    return Label(score=float(found[-1]), scale_max=AUTOJ_SINGLE_SCALE) if found else None
