"""About and help: the accepted input layouts, the protocols, and how to read the results."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.io.layouts import LAYOUTS

LAYOUT_NAMES = {
    "ours": "PocketJudge",
    "alpaca": "Alpaca / EasyJudge",
    "judgelm": "JudgeLM",
    "pandalm": "PandaLM",
    "autoj_pairwise": "Auto-J pairwise",
    "autoj_single": "Auto-J single",
    "llmbar": "LLMBar",
    "pointwise": "Pointwise scores",
    "prometheus": "Prometheus (absolute grading with a rubric)",
}

PROTOCOLS = pd.DataFrame(
    [
        (
            "Single answer grading",
            "1 (more are graded one by one)",
            "a score per criterion, the overall score, feedback",
        ),
        ("Pairwise comparison", "2", "scores for A and B, a verdict A / B / tie, feedback"),
        ("Multi-answer ranking", "2-6", "scores per answer and a ranking, in one call"),
        (
            "Reference-anchored single grading",
            "1 + reference",
            "single grading where the reference counts as the full-score answer",
        ),
        ("Auto", "any", "1 answer: single, 2: pairwise, 3 or more: multi"),
    ],
    columns=["protocol", "answers", "what the judge writes"],
)

HELP = """
### Reading the results

- **Overall score**: the weighted mean of the criterion scores, the first two criteria
  counting double (or the points total for a `sum` rubric). Verdicts and rankings follow
  from the overall scores, so they always agree with them.
- **Score mode and critiques**: by default the verdict (or grade, or ranking) and the
  criterion scores are read from the judge's probabilities in one pass, without writing
  text; "Explain" asks the judge for a critique of a judgment afterwards (with the verdict
  fixed), and "Full reply" mode writes everything, critique included. A judge that writes
  no critique says so.
- **Confidence**: the judge's own probability for the decision it reports. For a pair,
  each order gives its probabilities for A, B and tie; both orders are averaged, so a
  preference for a position cancels out, and the verdict is the one they support. For a
  grade it is the probability of that grade, for a ranking that of its top answer.
- **Uncertain**: a verdict whose confidence is below the judge's threshold (sidebar) is
  shown as "Uncertain (leans to A)" and written as `"winner": "uncertain"` with its
  `leaning`: the judge cannot tell the answers apart, so it is not a decision.
- **How far to trust a judge**: the judge page and the batch dashboard show how often the
  judge agreed with people on labelled pairs it never trained on, beside "the longer
  answer wins" on the same pairs (from its model card). A judge that does no better than
  that heuristic gives hints, not decisions.
- **Position bias and consistency**: judges tend to prefer the first (or the second) answer
  of a pair. With swap debiasing on, each pair is judged in both orders. *Agreement*
  combine keeps a verdict only when both orders give it (else tie); *position-calibrated*
  averages the expected scores over both orders. Position consistency is the share of
  pairs where both orders agreed: a low value means the verdicts say more about position
  than about the answers.
- **unparsed / error**: an unparsed row is a judgment the model did not write in a valid
  form; its raw output is kept and no score is invented. An error row could not be judged
  (bad input, a missing reference for anchored grading); its message says what to fix.
- **Reference metrics**: ROUGE-1/2/L, BLEU and BERTScore F1 measure text overlap and
  similarity with the reference, 0 to 1. They are no judgment of quality; they help spot
  answers that drift from the reference.

### Privacy

Everything runs on this machine: the judge model through llama.cpp, the metrics offline.
Nothing you type or upload leaves it.
"""


def page() -> None:
    st.title("About PocketJudge")
    st.markdown(
        "A local LLM-as-a-judge: grade one answer, compare two, or rank up to six, "
        "optionally against a reference, with criteria that fit the task."
    )
    st.header("Protocols")
    st.dataframe(PROTOCOLS, hide_index=True)
    st.header("Input formats")
    st.markdown(
        'Upload JSONL (one object per line) or a JSON array (or `{"data": [...]}`). Each '
        "row's layout is recognised from its keys, so one file may mix layouts; unknown "
        "fields are kept in the output's `metadata`. Optional fields are in brackets."
    )
    st.dataframe(
        pd.DataFrame(
            [(LAYOUT_NAMES.get(name, name), keys) for name, keys in LAYOUTS.items()],
            columns=["layout", "fields"],
        ),
        hide_index=True,
    )
    st.markdown(
        "Rows that name the models behind the answers (`answer_models`, or JudgeLM's "
        "`answerN_model_id`) also get a model leaderboard."
    )
    st.markdown(HELP)


page()
