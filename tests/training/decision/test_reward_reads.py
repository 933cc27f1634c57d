"""The reward model's reads for the decision fit (training/decision/reward_reads.py): the
requests its loan held out, whole, and the reads joined to the fit's rows and measure's."""

from __future__ import annotations

import json
from pathlib import Path

from training.decision.measure import dev_rewards
from training.decision.reads import pair_key
from training.decision.reward_reads import SIGNAL, held_out_pairs, held_out_rows, reward_row


def test_the_held_out_pairs_are_the_loans_held_out_fold_whole_requests_and_no_other():
    """Session 23's loan held out request-grouped fold 0 of 5: its 1,245 original pairs."""
    from training.decision.fit_config import load_config
    from training.decision.in_sample import head_fitting_pairs

    held = held_out_pairs()
    assert len(held) == 1245
    questions = {p.question for p in held}
    fitting = head_fitting_pairs(load_config().judge)
    assert all(p.question in questions for p in fitting if p.question in questions)
    assert sum(p.question in questions for p in fitting) == len(held)  # every pair of each
    assert 0.15 < len(questions) / len({p.question for p in fitting}) < 0.25


def test_reads_join_the_fits_rows_with_states_out_of_fold_and_measures_by_line(tmp_path: Path):
    held = held_out_pairs()[:2]
    rows = [reward_row("held-out", None, None, p, 1.5 * n, "") for n, p in enumerate(held)]
    rows.append(reward_row("dev", "natural.json", 7, held[0], -2.0, ""))
    rows.append(reward_row("held-out", None, None, held_out_pairs()[2], None, "a failure"))
    (tmp_path / "part0.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows) + '{"cut short', encoding="utf-8"
    )
    joined = held_out_rows(tmp_path)
    assert sorted(row["key"] for row in joined) == sorted(pair_key(p) for p in held)
    for row in joined:
        assert row["out_of_fold"] == ["states"] and "states" in row["values"]
        assert row["values"][SIGNAL] == (0.0 if row["key"] == pair_key(held[0]) else 1.5)
    assert dev_rewards(tmp_path) == {("natural.json", 7): -2.0}
