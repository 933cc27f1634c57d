"""Streamlit views of one judgment: verdict first, then confidence, charts and feedback.

Shared by the single-item page and the batch page's row inspector. Model text (the
feedback, the raw output) is never rendered as HTML: it is shown as plain text, or as
Markdown with raw HTML escaped and images reduced to their alt text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from app.catalog.scenarios import load_catalog
from app.deciding.decision import share_words
from app.deciding.state_head import PART_WORDS, reference_signals
from app.records import Judgment, Protocol, Status
from app.reports import charts
from app.ui.code_run_note import behaviour_note, code_run_details, code_unread_note
from app.ui.phrases import listed
from app.ui.rubric_grade_note import rubric_grade_note
from app.ui.tables import plain_feedback
from models.cards import MeasuredRow
from models.foundation.errors import EngineStopped

CONFIDENCE_HELP = (
    "The judge's own probability for the decision it reports: for a pair, the probability of "
    "the verdict averaged over both orders (A first, then B first); for a grade, of that "
    "grade; for a ranking, of the top answer. Below the judge's threshold a verdict is "
    "reported as uncertain, with the way it leans."
)
CONSISTENCY_HELP = (
    "With swap debiasing the pair is judged in both orders (A first, then B first). A judge "
    "that prefers a position gives different verdicts; PocketJudge then calls it a tie."
)


def engine_stopped_message(error: EngineStopped | str, then: str) -> str:
    """What a page says when the engine worker died under a call (`error`, or its message):
    how it ended, that the app lives on, and `then` (what the user can do next)."""
    text = str(error)
    return f"{text[:1].upper()}{text[1:]}. The app is still running: {then}"


def show_judgment(
    judgment: Judgment,
    *,
    names: Mapping[str, str] | None = None,
    scale: tuple[float, float] | None = None,
    top: float | None = None,
    key: str = "result",
    on_explain: Callable[[], None] | None = None,
) -> None:
    """The whole result of one judgment; `key` keeps widget keys unique per place.

    `scale` is the criterion scores' axis, `top` the highest overall score possible;
    `on_explain` asks the judge for a critique (an "Explain" button where there is none).
    """
    if judgment.status is not Status.OK:
        _show_failure(judgment)
        return
    _headline(judgment, top)
    _confidence(judgment)
    if judgment.cascade:
        st.caption(cascade_note(judgment))
    if judgment.scenario_guesses:
        scenarios = {s.id: s.name for s in load_catalog().scenarios.values()}
        st.caption(scenario_note(judgment.scenario or "", judgment.scenario_guesses, scenarios))
    if judgment.truncated:
        st.caption(
            "Some text was cut from the middle to fit the model's context (marked in the "
            "prompt as '[... N characters cut ...]'); the judge did not read all of it."
        )
    if (note := criteria_agreement_note(judgment)) is not None:
        st.caption(note)
    if (note := rubric_grade_note(judgment)) is not None:
        st.caption(note)
    if judgment.answers and judgment.answers[0].criteria:
        _charts(judgment, names, scale, key)
    if charts.has_reference_metrics(judgment):
        st.plotly_chart(charts.reference_metrics_chart(judgment), key=f"{key}_reference")
    _feedback(judgment, key, on_explain)
    _raw(judgment)


def show_measured(rows: Sequence[MeasuredRow], model: str) -> None:
    """What the judge's model card measured, beside "the longer answer wins"."""
    if not rows:
        st.caption(
            f"No measured agreement is on record for `{model}`: treat its verdicts as unchecked."
        )
        return
    lines = [
        f"- `{row.file}` ({row.rows} labelled rows it never trained on): **{row.judge:.1f} %** "
        f"agreement; the longer answer wins: {row.longer_answer_wins:.1f} %"
        for row in rows
    ]
    weaker = [row for row in rows if row.no_better_than_length]
    chance = [row for row in rows if row.below_coin_flip]
    st.markdown(f"**How often `{model}` agrees with people** (from its model card)")
    st.markdown("\n".join(lines))
    if weaker or chance:
        said = []
        if weaker:
            said.append(
                f"On {len(weaker)} of {len(rows)} sets this judge agrees with people no more "
                "often than picking the longer answer."
            )
        if chance:
            names = ", ".join(f"`{row.file}`" for row in chance)
            said.append(
                f"On {names} it agrees less often than a coin tossed between the answers "
                f"({', '.join(f'{row.coin_flip:.1f} %' for row in chance)}): there its "
                "verdicts point the wrong way more often than not."
            )
        said.append("Read its verdicts as a rough hint, and check the important ones yourself.")
        st.warning(" ".join(said))


def show_preview(judgment: Judgment, top: float | None, note: str) -> None:
    """A judgment's verdict and confidence alone, shown while the rest is read (`note`
    says what is coming); no widgets, so the whole result can replace it."""
    if judgment.status is not Status.OK:
        return
    _headline(judgment, top)
    _confidence(judgment)
    st.caption(note)


def _show_failure(judgment: Judgment) -> None:
    if judgment.status is Status.UNPARSED:
        st.warning(
            f"The judge's output could not be read as a valid judgment: {judgment.error}. "
            "No score is invented; the raw output is below. Try more max new tokens, "
            "fewer criteria, or another model."
        )
    else:
        st.error(f"This item could not be judged: {judgment.error}")
    _raw(judgment, expanded=judgment.status is Status.UNPARSED)


def verdict_headline(judgment: Judgment) -> str:
    """ "Answer A is better", "Tie", or "Uncertain (leans A)"."""
    winner = judgment.winner
    if winner == "uncertain":
        leaning = judgment.leaning
        leans = "a tie" if leaning == "tie" else f"answer {leaning}" if leaning else "nothing"
        return f"Uncertain (leans to {leans})"
    return "Tie" if winner == "tie" else f"Answer {winner} is better"


def relevance_note(relevance: dict) -> str:
    """What the judge said alone, and how request relevance moved it."""
    own = relevance.get("judge_probs") or {}
    leaning = "A" if own.get("A", 0.0) > own.get("B", 0.0) else "B"
    closer = "A" if relevance.get("relevance_difference", 0.0) > 0 else "B"
    return (
        f"Joined with request relevance: the judge alone leaned to answer {leaning} "
        f"(P(A) {own.get('A', 0.0):.0%}, P(B) {own.get('B', 0.0):.0%}); answer {closer} is "
        f"closer to the request (cosine difference {relevance.get('relevance_difference', 0):+.2f}"
        "). Relevance rewards an answer on the request's topic, not a correct one."
    )


def cascade_note(judgment: Judgment) -> str:
    """Which judge of a cascade decided, and what the first one said when it was unsure."""
    record = judgment.cascade or {}
    if record.get("decided_by") != "second":
        return f"Decided by the first judge (confidence at least {record.get('below')})."
    first = record.get("first_confidence")
    said = f"{record.get('first_verdict')} at {first:.0%}" if first is not None else "no verdict"
    return (
        f"Decided by the second judge, `{judgment.model}`: the first judge, "
        f"`{record.get('first_model')}`, was unsure ({said}; the threshold is "
        f"{record.get('below')})."
    )


def scenario_note(chosen: str, guesses: Mapping[str, float], names: Mapping[str, str]) -> str:
    """What the scenario classifier picked and what else it considered (an override hint).

    `names` maps scenario ids to names (ids are shown where a name is missing)."""

    def shown(scenario: str) -> str:
        return f"{names.get(scenario, scenario)} ({guesses[scenario]:.0%})"

    best, *others = guesses
    also = f"; also possible: {', '.join(shown(s) for s in others)}" if others else ""
    if chosen == best:
        head = f"Scenario detected: **{shown(best)}**{also}."
    else:
        head = (
            f"Scenario: not sure (best guess {shown(best)}{also}), so the general "
            f"criteria of **{names.get(chosen, chosen)}** were used."
        )
    return f"{head} Pick a scenario on the Scenario and criteria page to override."


# measured on the default judge (its card): where its criteria and its verdict disagreed
DISAGREEMENT = (
    "Where they disagreed on the measured sets, the verdict was right more often than the "
    "criteria: on 57 % of such pairs of Auto-J dev (ties left out), 68 % of LLMBar natural "
    "and 86 % of its adversarial neighbours."
)
HEAD_DISAGREEMENT = (  # training/EXPERIMENTS.md, session 32
    "Where the criterion head disagreed with the verdict on Auto-J dev, each was right about "
    "half the time (29 pairs, ties left out); on LLMBar the verdict was right on 67 % of such "
    "pairs (natural) and 92 % (adversarial neighbours, whose polished off-topic answers the "
    "criteria favour): treat this verdict as unsure, the criteria more so."
)


# what the verdict adds of a reference beside the criterion scores' lead, by signal
def criteria_agreement_note(judgment: Judgment) -> str | None:
    """What the criterion scores read beside a head's decision say of it: they agree, they
    disagree (shown, never hidden), or they could not be read."""
    if judgment.criteria_note:
        return f"No criterion scores: {judgment.criteria_note}."
    read = (
        "The criterion scores below are a reading of their own, apart from the verdict's "
        "head: the same model's probabilities with the criteria (and the reference, when "
        "there is one)"
    )
    if judgment.criteria_by_head:
        read = (
            "The criterion scores below are the judge's criterion head's estimate from the "
            "same read of each answer as the verdict (fitted to each criterion read apart on "
            "training pairs), not a reading of their own"
        )
    signals = reference_signals(judgment.verdict_parts or {})
    if judgment.criteria_by_head and signals:
        read = (
            f"{read}, each answer's moved by what the reference shows of it (the same "
            f"reading of the reference the verdict adds; not its style and format criteria: "
            f"a reference says what is right, not how to write it)"
        )
    words = PART_WORDS | share_words(judgment.model)
    adds = [words[name] for name in signals]
    if adds:
        listed = ", ".join(adds[:-1]) + f" and {adds[-1]}" if len(adds) > 1 else adds[0]
        read = f"{read}; the verdict adds {listed}"
    if judgment.criteria_ranking is not None and judgment.ranking is not None:
        if judgment.criteria_ranking[0] == judgment.ranking[0]:
            return f"{read}; they put the same answer first."
        return (
            f"{read}; they put answer {judgment.criteria_ranking[0]} first, not answer "
            f"{judgment.ranking[0]}: the two readings disagree. {_disagreement(judgment)}"
        )
    criteria, leaning = judgment.criteria_verdict, judgment.leaning
    if criteria is None or judgment.protocol is not Protocol.PAIRWISE:
        return None
    if criteria == leaning:
        return f"{read}; they favour {criteria} too."
    favour = "see no difference" if criteria == "tie" else f"favour {criteria}"
    return (
        f"{read}; they {favour} while the verdict leans to {leaning}: the two readings "
        f"disagree. {_disagreement(judgment)}"
    )


def _disagreement(judgment: Judgment) -> str:
    return HEAD_DISAGREEMENT if judgment.criteria_by_head else DISAGREEMENT


def head_note(parts: dict[str, float], shares: Mapping[str, str] | None = None) -> str:
    """How much each signal of a head moved a pairwise verdict (logit units), in words
    (`shares`: the judge's decision record's words for its shares)."""
    from app.deciding.state_head import part_phrases, reference_decided

    rewards = ["relevance rewards the request's topic"] if parts.get("relevance") else []
    rewards += ["length rewards more text"] if parts.get("length") else []
    caveat = f" ({' and '.join(rewards)}, not correctness)" if rewards else ""
    reads = "likelihoods and hidden states" if "fit" in parts else "hidden states"
    words = PART_WORDS | dict(shares or {})
    through = [words[name] for name in reference_signals(parts)]
    sees = "it reads neither the criteria nor a reference"
    if parts.get("reference"):  # a judgment saved before the share was split by signal: none
        sees = (
            f"a reference reaches it through {listed(through)}"
            if through
            else "a reference reaches it"
        )
    note = (
        f"Decided by a head on the model's {reads} of the request and each answer (not a "
        f"written reply; {sees}): " + "; ".join(part_phrases(parts, shares)) + caveat + "."
    )
    note += order_note(parts) + behaviour_note(parts) + code_unread_note(parts)
    note += rule_note(parts)
    if (leaned := reference_decided(parts)) is not None:
        note += f" **The reference decided this verdict**: without it the head leaned to {leaned}."
    return note


def own_answer_note(own: Mapping[str, Any], parts: Mapping[str, float]) -> str:
    """What the judge's own answer was and what it did to a pair's verdict (no reference)."""
    from app.deciding.state_head import reference_decided

    cut = "" if own.get("finished", True) else " (cut at its length cap)"
    sure = own.get("mean_logprob")
    how_sure = "" if sure is None else f"; its mean token log-probability {sure:.2f}, 0 is sure"
    note = (
        f"No reference was given, so the judge first wrote its own answer and read each answer "
        f'against it: "{own.get("text", "")}"{cut}{how_sure}.'
    )
    if own.get("computed"):
        note = (
            "No reference was given, so the judge first computed its own answer with a short "
            "program it wrote, run in the jail, and read each answer against its result: "
            f'"{own.get("text", "")}".'
        )
    moved = parts.get("own_answer")
    if not moved and not any(name.startswith("self_reference_") for name in parts):
        return note + " Its decision record does not weigh this answer: shown, not counted."
    if not moved:
        return note + " Both answers read alike against it: it moved nothing."
    note += f" It moved the score {abs(moved):.2f} toward {'A' if moved > 0 else 'B'}."
    if (leaned := reference_decided(dict(parts), "own_answer")) is not None:
        note += f" **The judge's own answer decided this verdict**: without it, {leaned}."
    return note


def rule_note(parts: dict[str, float]) -> str:
    """The judge's rule that decided the pair, with the confidence it earned on training
    pairs ("" where no rule decided)."""
    from app.deciding.state_judging import RULE_PREFIX

    ruled = [
        (k.removeprefix(RULE_PREFIX), v) for k, v in parts.items() if k.startswith(RULE_PREFIX)
    ]
    if not ruled:
        return ""
    name, confidence = ruled[0]
    return (
        f" **Decided by the judge's rule `{name}`**, at the confidence it earned on the "
        f"training pairs it decided ({confidence:.0%}), not certainty."
    )


def order_note(parts: dict[str, float]) -> str:
    """What reading the request's items along each answer in the reference's order found,
    in words ("" where the reference restates no items or an answer leaves one out)."""
    lead = parts.get("reference_order_difference")
    if lead is None:
        return ""
    read = " The reference puts the request's items in an order"
    if not lead:
        return f"{read}: both answers state them in it equally."
    ahead = "A" if lead > 0 else "B"
    return f"{read}: answer {ahead} states {abs(lead):.0%} more of them in that order."


def _headline(judgment: Judgment, top: float | None) -> None:
    labels = charts.answer_labels(judgment)
    if judgment.protocol is Protocol.PAIRWISE:
        winner = judgment.winner
        st.subheader(f"Verdict: {verdict_headline(judgment)}")
        if winner == "uncertain":
            st.caption(
                "The judge's confidence is below its threshold, so this is not a decision: "
                "the two answers may be equally good, or the judge cannot tell them apart."
            )
        elif judgment.consistent is False:
            st.caption(
                "The two orders disagreed, so the verdict is a tie."
                if winner == "tie"
                else "The two orders disagreed; the verdict comes from the expected scores "
                "averaged over both orders."
            )
        if judgment.relevance:
            st.caption(relevance_note(judgment.relevance))
        if judgment.verdict_parts:
            st.caption(head_note(judgment.verdict_parts, share_words(judgment.model)))
        if judgment.own_answer:
            st.caption(own_answer_note(judgment.own_answer, judgment.verdict_parts or {}))
        if details := code_run_details(judgment.code_run, ["A", "B"]):
            st.caption(details)
    elif judgment.ranking:
        order = " > ".join(labels[n - 1] for n in judgment.ranking)
        st.subheader(f"Ranking: {order}")
        if judgment.ranking and judgment.uncertain:
            st.caption(
                "Uncertain: the judge's confidence in the top answer is below its threshold."
            )
    else:
        st.subheader("Grade" if len(judgment.answers) == 1 else "Grades")
    if not judgment.answers:
        return
    out_of = f" / {top:g}" if top is not None else ""
    columns = st.columns(len(judgment.answers))
    for column, label, scores in zip(columns, labels, judgment.answers):
        expected = scores.expected_overall
        column.metric(
            label if label.startswith("Answer") else f"Answer {label}",
            f"{scores.overall:g}{out_of}",
            help=None
            if expected is None
            else f"Expected overall (from the score probabilities): {expected:.2f}",
        )


def _confidence(judgment: Judgment) -> None:
    columns = st.columns(3)
    if judgment.confidence is not None:
        columns[0].metric("Confidence", f"{judgment.confidence:.0%}", help=CONFIDENCE_HELP)
    else:
        columns[0].metric("Confidence", "n/a", help="This backend gives no score probabilities.")
    if judgment.verdict_probs:
        shown = ", ".join(f"{v} {p:.0%}" for v, p in judgment.verdict_probs.items())
        columns[0].caption(f"P(verdict): {shown}")
    if judgment.calibrated_confidence is not None:
        columns[0].caption(
            f"Calibrated: verdicts this confident matched the label "
            f"{judgment.calibrated_confidence:.0%} of the time on the pairs the judge was "
            "calibrated on."
        )
    if judgment.entropy is not None:
        columns[0].caption(
            f"Decision entropy: {judgment.entropy:.2f} nats over the whole vocabulary "
            "(lower is surer)."
        )
    if judgment.consistent is not None:
        agreed = "agreed" if judgment.consistent else "disagreed"
        columns[1].metric("Position consistency", agreed, help=CONSISTENCY_HELP)
    if judgment.latency_s is not None:
        columns[2].metric("Time", f"{judgment.latency_s:.1f} s")


def _charts(
    judgment: Judgment,
    names: Mapping[str, str] | None,
    scale: tuple[float, float] | None,
    key: str,
) -> None:
    bars, radar = st.tabs(["Scores per criterion", "Radar"])
    with bars:
        st.plotly_chart(charts.criterion_bars(judgment, names, scale), key=f"{key}_bars")
    with radar:
        st.plotly_chart(charts.criterion_radar(judgment, names, scale), key=f"{key}_radar")


def _feedback(judgment: Judgment, key: str, on_explain: Callable[[], None] | None) -> None:
    st.markdown("**Critique**")
    if judgment.feedback_note:
        st.info(f"No critique: {judgment.feedback_note}.")
        return
    if not judgment.feedback:
        if on_explain is not None:
            st.button(
                "Explain",
                key=f"{key}_explain",
                on_click=on_explain,
                help="Ask the judge to write why it decided this (a few seconds: one "
                "generation with its decision fixed).",
            )
        else:
            st.caption("No critique was asked for (score mode).")
        return
    as_markdown = st.toggle("Show the critique as Markdown", key=f"{key}_feedback_markdown")
    if as_markdown:
        st.markdown(plain_feedback(judgment.feedback))
    else:
        st.text(judgment.feedback)


def _raw(judgment: Judgment, *, expanded: bool = False) -> None:
    if not judgment.raw_output and not judgment.raw_output_swapped:
        return
    with st.expander("Raw model output", expanded=expanded):
        st.code(judgment.raw_output or "", language="json")
        if judgment.raw_output_swapped:
            st.caption("Second order (answers swapped)")
            st.code(judgment.raw_output_swapped, language="json")
