"""`python -m training.heads.likelihood_head fit`: choose and fit the likelihood head (issue 29).

On the fitting pairs read so far (training split only; no evaluation file is read
here), with 5 folds grouped by request so a counterexample never sits beside its
original pair:

- each variant (which signals sit beside each other) and its L2 strength, by the
  cross-validated log loss on the decisive pairs: likelihood features alone, with
  the answer's length, with the model's states, with MiniLM request relevance;
- the rules that need no fitting (PMI per token, PMI summed, cond per token), by
  cross-validated agreement beside the likelihood-only head: the better of these
  is the likelihood judge that works with any GGUF;
- the tie margin on the Auto-J pairs' out-of-fold predictions (their labels tie);
- the grade head (ridge regression to the teacher's 1-10 grade) on the states, the
  likelihood features or both, by cross-validated Spearman.

It writes `state_head.json` (the chosen head's state vectors) and `decision.yaml` (every
weight around them), `likelihood_head.json` and `likelihood_decision.yaml` (likelihood
features only, any model), `fit_report.json`, and the held-out single rows for the
evaluation.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from app.deciding.state_head import LIKELIHOOD_DECISION_FILE, LIKELIHOOD_HEAD_FILE
from app.records import JudgeItem
from models.readings import FEATURES, AnswerReading
from training.datasets.likelihood_data import RUN_DIR, cache_for, cut, fitting_pairs
from training.decision.head_records import grade_rule, head_record
from training.decision.record_file import write_record_file
from training.heads.state_head import (
    agreement_by_source,
    best_strength,
    choose_tie_margin,
    fit_logistic,
    source_of,
    variant_report,
    verdicts,
)

LIKELIHOOD = ("pmi_mean", "pmi_sum", "pmi_head", "uncond_mean", "uncond_sum")
VARIANTS: dict[str, tuple[bool, tuple[str, ...], bool]] = {  # states?, features, relevance?
    "likelihood": (False, LIKELIHOOD, False),
    "likelihood + length": (False, (*LIKELIHOOD, "log_tokens"), False),
    "states": (True, (), False),
    "states + likelihood": (True, LIKELIHOOD, False),
    "states + likelihood + length": (True, (*LIKELIHOOD, "log_tokens"), False),
    "states + likelihood + relevance": (True, LIKELIHOOD, True),
}
# inverse L2 strengths (per standardized feature; likelihood features are boosted as explicit
# signals, training.heads.state_head.fit_logistic): wide, as a few likelihood weights need little
CS = (0.00001, 0.00003, 0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 1.0)
MIN_GRADE_ROWS = 20  # fewer single rows read: no grade head (grades then come from the reply)
RULES = {"PMI per token": "pmi_mean", "PMI summed": "pmi_sum", "cond per token": "cond_mean"}
FOLDS = 5


def readings_of(cache, items: list[JudgeItem]) -> list[list[AnswerReading]]:  # type: ignore[no-untyped-def]
    return [[cache.get(*cut(i.question, a)) for a in i.answers] for i in items]


def feature_table(readings: list[list[AnswerReading]]) -> list[list[dict[str, float]]]:
    return [[r.features() for r in pair] for pair in readings]


def _best_variant(states: np.ndarray, table: list, pairs: list, variants: dict) -> tuple:
    """Each variant's L2 strength by request-grouped CV (its report into `variants`), and the
    best: (loss, name, C, out-of-fold P(A), design matrix, explicit feature count)."""
    winners = [p.label.winner for p in pairs]
    groups = [p.question for p in pairs]
    relevance = None
    best: tuple | None = None
    for name, (use_states, names, use_relevance) in VARIANTS.items():
        if use_relevance and relevance is None:
            from app.deciding.relevance import relevance_differences

            relevance = relevance_differences(pairs)
        x = _design(
            states if use_states else None, table, names, relevance if use_relevance else None
        )
        explicit = x.shape[1] - (states.shape[1] if use_states else 0)
        c, loss, p_oof = best_strength(x, winners, groups, CS, explicit)
        variants[name] = variant_report(c, loss, p_oof, pairs)
        print(name, variants[name], flush=True)
        if best is None or loss < best[0]:
            best = (loss, name, c, p_oof, x, explicit)
    assert best is not None
    return best


def fit(args: argparse.Namespace) -> int:
    from app.deciding.state_head import StateHead
    from training.datasets.examples import write_single_rows
    from training.datasets.state_head_data import single_rows
    from training.evaluation.meta_metrics import longer_answer
    from training.heads.state_head import HELDOUT_FILE

    cache = cache_for(args.gguf, args.cache)
    every = fitting_pairs(args.alpacaeval, args.per_request)
    pairs = [p for p in every if all(cache.has(*cut(p.question, a)) for a in p.answers)]
    winners = [p.label.winner for p in pairs]
    groups = [p.question for p in pairs]
    decisive = np.array([w in ("A", "B") for w in winners])
    y = np.array([1 if w == "A" else 0 for w in winners])
    readings = readings_of(cache, pairs)
    table = feature_table(readings)
    states = np.stack([pair[0].states - pair[1].states for pair in readings])  # type: ignore[operator]
    report: dict = {
        "gguf": args.gguf.name,
        "pairs read": len(pairs),
        "pairs in the fitting set": len(every),
        "by source": _counts(pairs),
        "variants": {},
    }
    longer = [longer_answer((len(p.answers[0]), len(p.answers[1]))) for p in pairs]
    report["longer answer wins"] = agreement_by_source(longer, pairs)
    best = _best_variant(states, table, pairs, report["variants"])
    report["rules"] = {
        rule: agreement_by_source(
            verdicts(np.array([_sigmoid(t[0][f] - t[1][f]) for t in table])), pairs
        )
        for rule, f in RULES.items()
    }
    _, name, c, p_oof, x, explicit = best
    use_states, names, use_relevance = VARIANTS[name]
    tie_margin = choose_tie_margin(p_oof, pairs)
    report["chosen"] = {
        "variant": name,
        "tie margin": tie_margin,
        "agreement with the tie margin": agreement_by_source(verdicts(p_oof, tie_margin), pairs),
    }
    weights = fit_logistic(x[decisive], y[decisive], c, explicit)
    hidden = states.shape[1] if use_states else 0
    named = dict(zip(names + (("relevance",) if use_relevance else ()), weights[hidden:]))
    grade = fit_grades(cache)
    report["grades"] = grade["report"]
    head = StateHead(
        base_file=args.gguf.name,
        reads="reply",
        weights=tuple(_round(w) for w in weights[:hidden]),
        grade_weights=grade["weights"],
        fitted_on={
            "pairs": int(decisive.sum()),
            "ties": int((~decisive).sum()),
            # the fitting set's recipe: a decision fit leaves its pairs out (in_sample.py)
            "alpacaeval_pairs": args.alpacaeval,
            "per_request": args.per_request,
            "C": c,
            "variant": name,
            "tie_margin": tie_margin,
            "single_rows": grade["report"]["rows"],
        },
    )
    own = ({"states": 1.0} if hidden else {}) | {k: _round(v) for k, v in named.items()}
    fitted = _fitted(head.fitted_on)
    record = head_record(args.out.name, own, fitted, hidden, _grade_rule(grade, hidden))
    rule_head, rule_record = likelihood_only_head(args, table, winners, groups, report)
    write_single_rows(single_rows()[1], HELDOUT_FILE)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "state_head.json").write_text(head.model_dump_json() + "\n", encoding="utf-8")
    write_record_file(args.out / "decision.yaml", record, tables=False, by=BY)
    (args.out / LIKELIHOOD_HEAD_FILE).write_text(rule_head.model_dump_json() + "\n")
    write_record_file(args.out / LIKELIHOOD_DECISION_FILE, rule_record, tables=False, by=BY)
    (args.out / "fit_report.json").write_text(json.dumps(report, indent=2) + "\n")
    (RUN_DIR / "fit_report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


BY = "`python -m training.heads.likelihood_head fit`"


def _fitted(on: dict) -> dict[str, str]:  # type: ignore[type-arg]
    """Where the head's pairwise weights were fitted, from its `fitted_on`."""
    rows = f"{on['pairs']} decisive training pairs ({on['ties']} ties beside): every Auto-J pair "
    rows += f"and {on['alpacaeval_pairs']} AlpacaEval pairs (at most {on['per_request']} per "
    rows += "instruction), with counterexamples"
    cv = f"C {on['C']}, variant '{on['variant']}'"
    return {"by": "python -m training.heads.likelihood_head fit", "rows": rows, "cv": cv}


def _grade_rule(
    grade: dict,  # type: ignore[type-arg]
    width: int,
    by: str = "python -m training.heads.likelihood_head fit",
) -> dict | None:  # type: ignore[type-arg]
    """fit_grades' grade as a record's grade rule, fitted `by` (None: it grades not)."""
    if grade["weights"] is None:
        return None
    rows = f"{grade['report']['rows']} rated single answers: {grade['report']['chosen']}"
    spearman = grade["report"]["cross-validated Spearman"][grade["report"]["chosen"]]
    cv = f"ridge (alpha {grade['report']['alpha']:g}), cross-validated Spearman {spearman}"
    fitted = {"by": by, "rows": rows, "cv": cv}
    weights = ({"grade_states": 1.0} if grade["weights"] else {}) | grade["likelihood"]
    return grade_rule(weights, grade["intercept"], fitted, width) | {"fitted": fitted}


def likelihood_only_head(args, table, winners, groups, report):  # type: ignore[no-untyped-def]
    """The judge for any GGUF: likelihood features alone (no states, no length), a
    logistic head fitted here; its weights are in nats, which every model shares. The head
    (it reads no states) and its record."""
    from app.deciding.state_head import StateHead

    x = _design(None, table, LIKELIHOOD, None)
    decisive = np.array([w in ("A", "B") for w in winners])
    y = np.array([1 if w == "A" else 0 for w in winners])
    c = report["variants"]["likelihood"]["C"]
    weights = fit_logistic(x[decisive], y[decisive], c, x.shape[1])
    grade = fit_grades(cache_for(args.gguf, args.cache), likelihood_only=True)
    report["likelihood judge grades"] = grade["report"]
    fitted_on = {
        "pairs": int(decisive.sum()),
        "C": c,
        "variant": "likelihood",
        "on": args.gguf.name,
    }
    head = StateHead(base_file="any", reads="reply", weights=(), fitted_on=fitted_on)
    fitted = {
        "by": "python -m training.heads.likelihood_head fit",
        "rows": f"{int(decisive.sum())} decisive training pairs read by {args.gguf.name} (the "
        "weights are on nats, which every model shares)",
        "cv": f"C {c}, variant 'likelihood'",
    }
    own = {k: _round(w) for k, w in zip(LIKELIHOOD, weights)}
    return head, head_record("pj-qwen15-pmi", own, fitted, 0, _grade_rule(grade, 0))


def refit_grades(args: argparse.Namespace) -> int:
    """Fit the grade head of the judge in `args.out` again on the single rows read now,
    leaving its pairwise head as it is (the pairwise cross-validation takes most of `fit`)."""
    import yaml

    from app.deciding.state_head import StateHead

    path = args.out / "state_head.json"
    head = StateHead.model_validate_json(path.read_text(encoding="utf-8"))
    grade = fit_grades(cache_for(args.gguf, args.cache))
    head = head.model_copy(
        update={
            "grade_weights": grade["weights"],
            "fitted_on": {**head.fitted_on, "single_rows": grade["report"]["rows"]},
        }
    )
    path.write_text(head.model_dump_json() + "\n", encoding="utf-8")
    record_path = args.out / "decision.yaml"
    record = yaml.safe_load(record_path.read_text(encoding="utf-8"))
    record["grade"] = _grade_rule(grade, len(head.weights))
    kept = {k: v for k, v in record.items() if v is not None}
    write_record_file(record_path, kept, tables=False, by=BY)
    report_path = args.out / "fit_report.json"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    report["grades"] = grade["report"]
    report_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(grade["report"], indent=2))
    return 0


def fit_grades(cache, likelihood_only: bool = False) -> dict:  # type: ignore[no-untyped-def]
    """Ridge regression to the 1-10 grade from the states, the likelihood features or both,
    whichever cross-validates best (Spearman); the likelihood features alone for a head
    that reads no states."""
    from scipy.stats import spearmanr

    from training.datasets.state_head_data import single_rows

    # every single row of the fitting split that has been read (`read` reads a sample of
    # them; a GPU machine reads all: training/device/gpu_reads.py)
    rows = [r for r in single_rows()[0] if cache.has(*cut(r.question, r.answers[0]))]
    if len(rows) < MIN_GRADE_ROWS:
        return {
            "weights": None,
            "likelihood": {},
            "intercept": 0.0,
            "report": {"rows": len(rows), "chosen": f"none: fewer than {MIN_GRADE_ROWS} rows read"},
        }
    readings = [cache.get(*cut(r.question, r.answers[0])) for r in rows]
    states = np.stack([r.states for r in readings])
    lik = np.array([[r.features()[f] for f in FEATURES] for r in readings])
    y = np.array([float(r.label.score) for r in rows])
    options = {
        "states": (states, None),
        "likelihood": (None, lik),
        "states + likelihood": (states, lik),
    }
    if likelihood_only:
        options = {"likelihood": options["likelihood"]}
    found = {name: _ridge_option(*option, y) for name, option in options.items()}
    lengths = [len(r.answers[0]) for r in rows]
    name = max(found, key=lambda k: found[k][0])
    if found[name][0] <= 0:  # worse than no grade head: grades come from the model's reply
        return {
            "weights": None,
            "likelihood": {},
            "intercept": 0.0,
            "report": {
                "rows": len(rows),
                "chosen": "none: no option cross-validates above 0",
                "cross-validated Spearman": {k: round(v[0], 3) for k, v in found.items()},
            },
        }
    _rho, model, scale, has_states, predicted = found[name]
    # A strong ridge pulls every grade toward the mean (here 4-5 for answers rated 1-10), and
    # the grade a user sees is rounded: stretch the head so its out-of-fold grades spread as
    # the ratings do (linear, so their order, and the Spearman, stay as they are).
    stretch = float(y.std() / max(predicted.std(), 1e-9))
    coef = model.coef_ / scale * stretch
    intercept = float(y.mean() + (model.intercept_ - predicted.mean()) * stretch)
    hidden = states.shape[1] if has_states else 0
    report = {
        "rows": len(rows),
        "chosen": name,
        "alpha": float(model.alpha_),
        "cross-validated Spearman": {k: round(v[0], 3) for k, v in found.items()},
        "length Spearman": round(float(spearmanr(lengths, y).statistic), 3),
        "stretch": round(stretch, 3),
        "rounded grades' cross-validated Spearman": round(
            float(
                spearmanr(np.clip(np.round(_stretched(predicted, y, stretch)), 1, 10), y).statistic
            ),
            3,
        ),
    }
    return {
        "weights": tuple(_round(w) for w in coef[:hidden]) if has_states else (),
        "likelihood": {f: _round(w) for f, w in zip(FEATURES, coef[hidden:])}
        if name != "states"
        else {},
        "intercept": _round(intercept),
        "report": report,
    }


def _ridge_option(states: np.ndarray | None, lik: np.ndarray | None, y: np.ndarray) -> tuple:
    """One option's ridge to the grade: (out-of-fold Spearman, the model fitted on all rows,
    the features' scale, whether it reads states, the out-of-fold grades)."""
    from scipy.stats import spearmanr
    from sklearn.linear_model import RidgeCV
    from sklearn.model_selection import cross_val_predict

    x = np.concatenate([a for a in (states, lik) if a is not None], axis=1)
    scale = x.std(axis=0) + 1e-6
    model = RidgeCV(alphas=np.logspace(-1, 5, 13))
    predicted = cross_val_predict(model, x / scale, y, cv=FOLDS)
    model.fit(x / scale, y)
    rho = float(spearmanr(predicted, y).statistic)
    return rho, model, scale, states is not None, predicted


def _stretched(predicted: np.ndarray, y: np.ndarray, stretch: float) -> np.ndarray:
    return y.mean() + (predicted - predicted.mean()) * stretch


def _design(
    states: np.ndarray | None,
    table: list[list[dict[str, float]]],
    names: tuple[str, ...],
    relevance: np.ndarray | None,
) -> np.ndarray:
    columns = [] if states is None else [states]
    if names:
        columns.append(np.array([[t[0][f] - t[1][f] for f in names] for t in table]))
    if relevance is not None:
        columns.append(relevance[:, None])
    return np.concatenate(columns, axis=1)


def _counts(pairs: list[JudgeItem]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for p in pairs:
        key = source_of(p) + ("-tie" if p.label.winner == "tie" else "")
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _sigmoid(value: float) -> float:
    return float(1 / (1 + np.exp(-np.clip(value * 1e3, -50, 50))))


def _round(value: float) -> float:
    return float(f"{value:.6g}")
