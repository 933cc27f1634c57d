"""The command-line flags that change how a model judges, for every command that judges.

`python -m app judge` and `python -m training.evaluation.evaluate` take the same flags and
read them the same way: each flag's destination is the `JudgeSettings` field it sets
(models/judge_settings.py; a test holds them to its names), and a flag left out stays
None, so the model's registry setting stands (`app.judging.settings`). The flags of what a
run asks (`add_run_arguments`) are made from their declaration (models/run_settings.py):
flag, default, bounds and help, with the setting's name as the destination.
"""

from __future__ import annotations

import argparse
from typing import get_args

from app.deciding.state_head import LIKELIHOOD_DECISION_FILE, LIKELIHOOD_HEAD_FILE
from app.formats.prompts import DEFAULT_TEMPLATE, template_names
from app.judging.settings import TURNED_OFF, SettingsLayer
from models.judge_settings import SETTING_NAMES
from models.run_settings import Declared, declared
from models.verdict_settings import PairCombine

# --decider: the state head and the decision record it decides by, files under models/
DECIDERS = {"likelihood": (LIKELIHOOD_HEAD_FILE, LIKELIHOOD_DECISION_FILE)}


class _Decider(argparse.Action):
    """Sets the decider's head (the flag's destination) and its decision record."""

    def __call__(self, parser, namespace, value, option_string=None):  # type: ignore[no-untyped-def]
        head, record = DECIDERS[value]
        setattr(namespace, self.dest, head)
        namespace.decision_record = record


def add_judging_arguments(parser: argparse.ArgumentParser) -> None:
    """Template, pair combine, tie margin, input cap, uncertainty, criteria, mode, context."""
    parser.add_argument(
        "--template",
        choices=template_names(),
        help=f"prompt template (default: the model's own, else {DEFAULT_TEMPLATE}); judgelm, "
        "pandalm, autoj, prometheus and easyjudge are those judges' native formats (free text, "
        "judged in generate mode)",
    )
    parser.add_argument(
        "--combine",
        dest="pair_combine",
        choices=get_args(PairCombine),
        help="pairwise with swap: 'agree' keeps a verdict both orders give (else tie); "
        "'calibrated' averages expected scores over both orders (default: the model's setting)",
    )
    parser.add_argument(
        "--tie-margin",
        type=float,
        help="calibrated combine: a gap this small is a tie (default: the model's setting)",
    )
    parser.add_argument(
        "--max-input-chars",
        type=int,
        help="cut question and answers to this many characters (default: the model's "
        "setting, else what fits the context)",
    )
    parser.add_argument(
        "--uncertain-below",
        type=float,
        help="report pairwise verdicts and rankings below this confidence as uncertain "
        "(default: the model's setting)",
    )
    _add_criteria_arguments(parser)
    parser.add_argument(
        "--no-relevance-join",
        dest="relevance_join",
        action="store_const",
        const=TURNED_OFF,
        help="pairwise: report the judge's own verdict, not the one joined with request "
        "relevance (for judges whose registry entry joins them)",
    )
    parser.add_argument(
        "--no-state-head",
        dest="state_head",
        action="store_const",
        const=TURNED_OFF,
        help="decide from the model's reply, not from the head on its hidden states (for "
        "judges whose registry entry has a state head: the model zero-shot)",
    )
    parser.add_argument(
        "--decider",
        dest="state_head",
        action=_Decider,
        choices=list(DECIDERS),
        help="likelihood: decide pairs and rankings by the model's own likelihood of each "
        "answer given its request against none (PMI), a fixed head that needs no fitting and "
        "works with any GGUF on the llama-cpp backend",
    )
    add_run_arguments(parser, "mode", "n_ctx")


def judging_overrides(args: argparse.Namespace) -> SettingsLayer:
    """The flags given, as the user's layer of settings (None where a flag was left out);
    `--n-ctx` is the context the model is loaded with, given apart."""
    return SettingsLayer(**{name: getattr(args, name, None) for name in SETTING_NAMES})


def _add_criteria_arguments(parser: argparse.ArgumentParser) -> None:
    """Whether and how a judge reads criterion scores beside its verdict."""
    parser.add_argument(
        "--no-criteria",
        dest="criterion_scores",
        action="store_const",
        const=False,
        help="decision-first templates: read the verdict or grade alone, no criterion scores "
        "(fastest)",
    )
    parser.add_argument(
        "--criteria-apart",
        dest="criteria_read",
        action="store_const",
        const="apart",
        help="read each criterion of each answer in a grading prompt of its own (the slow, "
        "measured reads), not from the judge's criterion head",
    )


def add_run_arguments(parser: argparse.ArgumentParser, *names: str) -> None:
    """The flags of the run settings `names`, each as its declaration states it."""
    for name in names:
        setting = declared(name)
        parser.add_argument(
            setting.flag, dest=name, help=_flag_help(setting), **_flag_kind(setting)
        )


def _flag_kind(setting: Declared) -> dict[str, object]:
    if setting.kind is bool:  # a flag turns the default over
        return {"action": "store_false" if setting.default else "store_true"}
    kind = {"default": None if setting.layered else setting.default}
    if setting.choices:
        return {**kind, "choices": setting.choices}
    # the bounds are the widgets' (a command takes any value its type reads: a cascade
    # threshold above 1 sends every row on)
    return {**kind, "type": setting.kind, "metavar": setting.kind.__name__.upper()}


def _flag_help(setting: Declared) -> str:
    if setting.kind is bool:
        state = "off (on by default)" if setting.default else "on (off by default)"
        return f"{setting.label}: {state}. {setting.help}"
    said = setting.help.rstrip(".")
    if setting.layered:
        return f"{said} (default: the registry entry's, else {setting.default})."
    return f"{said} (default: {setting.default})."
