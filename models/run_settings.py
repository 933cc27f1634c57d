"""What one run asks of a judge: every user-facing run setting, declared here once.

Each field carries its default, its bounds, its help text, its command-line flag and its
sidebar widget. The flags of `python -m app judge` and `python -m training.evaluation.evaluate`
(app/judging/arguments.py), the sidebar's widgets and their starting values (app/ui),
the core's `JudgeConfig` and the registry's cascade threshold are made from it, and
`tests/test_settings_declared_once.py` fails when one of these defaults is written
anywhere else. How a judge model judges (template, pair combine, heads) is the other
declaration, `JudgeSettings` (models/judge_settings.py).

It lives in the models layer beside `JudgeSettings` so the registry can read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

Widget = Literal["radio", "toggle", "slider", "number", "none"]
ProtocolChoice = Literal["auto", "single", "pairwise", "multi", "anchored"]
ModeChoice = Literal["score", "generate"]
SelfReference = Literal["auto", "on", "off"]


def _setting(
    default: Any,
    *,
    flag: str,
    widget: Widget,
    help: str,
    label: str = "",
    step: float | None = None,
    layered: bool = False,
    app_default: Any = None,
    **bounds: float,
) -> Any:
    """A declared field. `layered`: the flag defaults to "not given" so a registry entry's
    value stands; `app_default`: the app starts from this instead (said why, where set)."""
    extra = {"flag": flag, "widget": widget, "label": label, "step": step, "layered": layered}
    if app_default is not None:
        extra["app_default"] = app_default
    return Field(default=default, description=help, json_schema_extra=extra, **bounds)


class RunSettings(BaseModel):
    """What a run asks; every field's default is the one every front end starts from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    protocol: ProtocolChoice = _setting(
        "auto",
        flag="--protocol",
        widget="radio",
        label="Protocol",
        help="Auto: one answer is graded, two are compared, three or more are ranked (the "
        "app's About page says what each protocol does).",
    )
    mode: ModeChoice = _setting(
        "score",
        flag="--mode",
        widget="radio",
        label="Judging mode",
        help="Score: the verdict (or grade, or ranking) and the criterion scores are read from "
        "the judge's probabilities in one pass, no text is written. Generate (full reply): the "
        "judge writes everything, critique included (slower; native templates always generate).",
    )
    use_reference: bool = _setting(
        True,
        flag="--no-reference",
        widget="toggle",
        label="Use the reference answer",
        help="When an item has a reference answer, the judge sees it. Anchored grading needs it.",
    )
    run_code: bool = _setting(
        True,
        flag="--no-run-code",
        widget="toggle",
        label="Run code answers against a reference function",
        help="Pairs whose reference is a Python function: each answer's function is run beside "
        "it on the same inputs, and the share of the reference's results it gives counts in the "
        "verdict. The code runs as Python in a jail (bubblewrap with a seccomp filter): no "
        "network, none of this machine's files (only the Python installation, read-only), a "
        "private 64 MB scratch folder, no new processes, at most 1 GB of memory, 0.5 s a call "
        "and 10 s of CPU time a program. Where no jail works here (bubblewrap missing, or "
        "user namespaces forbidden: `python -m app doctor` says), no answer's code runs and "
        "the verdict reads the text. Off: no code runs.",
    )
    self_reference: SelfReference = _setting(
        "auto",
        flag="--self-reference",
        widget="radio",
        label="The judge's own answer (pairs without a reference)",
        help="A pair without a reference in use: the judge first answers the request itself "
        "and reads each answer against its answer as against a reference, under weights of its "
        "own (its answer can be wrong). Where code may run, it first tries a short program that "
        "computes the answer, run in the jail. Auto: as the judge's decision record weighs it "
        "(the default judge's: only an answer a program computed, about a third more time a "
        "pair); on: always, a written answer where no program computes one (read and shown, "
        "moving the verdict only as the record weighs it); off: never.",
    )
    swap: bool = _setting(
        True,
        flag="--no-swap",
        widget="toggle",
        label="Swap debiasing (pairwise: judge both orders)",
        help="Judges A-B and B-A so a judge that favours a position cannot decide the verdict.",
    )
    # Off for commands (BERTScore loads a model; a batch may not want it); the app starts
    # with it on, because the result page shows the metrics beside the judge's scores.
    reference_metrics: bool = _setting(
        False,
        flag="--reference-metrics",
        widget="toggle",
        label="Reference metrics (ROUGE, BLEU, BERTScore)",
        help="Text similarity of each answer to the reference (ROUGE-1/2/L, BLEU, BERTScore F1) "
        "beside the judge's scores, for items with one; the first use loads a small BERTScore "
        "model (a few seconds).",
        app_default=True,
    )
    feedback: bool = _setting(
        False,
        flag="--feedback",
        widget="toggle",
        label="Write a critique for every batch row",
        help="Score mode: also write a critique of each judgment after its verdict (one more "
        "generation per item; in the app a single item has an Explain button instead).",
    )
    detect_scenario: bool = _setting(
        True,
        flag="--no-scenario-detection",
        widget="none",
        label="Scenario detection",
        help="Scenario auto: a row without a scenario gets the scenario classifier's pick (off: "
        "'default').",
    )
    temperature: float = _setting(
        0.0,
        flag="--temperature",
        widget="slider",
        label="Temperature",
        help="0 is greedy: the same input gives the same judgment.",
        step=0.05,
        ge=0.0,
        le=2.0,
    )
    top_p: float = _setting(
        1.0,
        flag="--top-p",
        widget="slider",
        label="Top-p",
        help="Sampling keeps the likeliest tokens up to this share of probability.",
        step=0.05,
        ge=0.05,
        le=1.0,
    )
    max_tokens: int = _setting(
        768,
        flag="--max-tokens",
        widget="number",
        label="Max new tokens",
        help="Raise it when judgments come back unparsed for running out.",
        step=32,
        ge=1,
        le=8192,
    )
    repeat_penalty: float = _setting(
        1.1,
        flag="--repeat-penalty",
        widget="number",
        label="Repeat penalty",
        help="Above 1 discourages repeating the last 64 tokens (free text only).",
        step=0.05,
        ge=1.0,
        le=2.0,
    )
    seed: int = _setting(
        0, flag="--seed", widget="number", label="Seed", help="The sampling seed.", step=1, ge=0,
        le=2**31 - 1,
    )  # fmt: skip
    n_ctx: int = _setting(
        4096,
        flag="--n-ctx",
        widget="number",
        label="Context length (tokens)",
        help="The context the model is loaded with, in tokens.",
        step=512,
        ge=512,
        le=131072,
    )
    n_threads: int = _setting(
        0,
        flag="--threads",
        widget="number",
        label="CPU threads",
        help="CPU threads (0: llama.cpp chooses).",
        step=1,
        ge=0,
        le=256,
    )
    n_gpu_layers: int = _setting(
        0,
        flag="--gpu-layers",
        widget="number",
        label="GPU layers",
        help="Layers offloaded to the GPU (99: all); needs a CUDA build (GPU=1 make setup).",
        step=1,
        ge=0,
        le=999,
    )
    workers: int = _setting(
        0,
        flag="--workers",
        widget="number",
        label="Engines for a batch",
        help="Engines judging a batch's rows at once, each its own process with one thread "
        "(0: one per usable core, at most 8, as memory allows; a server's backend: 1; "
        "--engine ray: its actors, 0 meaning 2). One item judged alone uses one engine and "
        "the threads.",
        step=1,
        ge=0,
        le=64,
    )
    cascade_below: float = _setting(
        0.6,
        flag="--cascade-below",
        widget="slider",
        label="Send verdicts with a confidence below",
        help="With a second judge: a verdict, grade or ranking whose confidence is below this "
        "goes to it.",
        step=0.05,
        layered=True,
        ge=0.0,
        le=1.0,
    )


RUN_DEFAULTS = RunSettings()
RUN_SETTING_NAMES = tuple(RunSettings.model_fields)


@dataclass(frozen=True)
class Declared:
    """One run setting as its declaration states it."""

    name: str
    default: Any
    help: str
    flag: str
    widget: Widget
    label: str
    step: float | None
    minimum: float | None
    maximum: float | None
    choices: tuple[str, ...] | None
    layered: bool
    app_default: Any

    @property
    def kind(self) -> type:
        return type(self.default)


def declared(name: str) -> Declared:
    """The declaration of run setting `name` (KeyError for a name not declared)."""
    field = RunSettings.model_fields[name]
    extra = dict(field.json_schema_extra or {})  # type: ignore[arg-type]
    bounds = {
        key: getattr(m, key) for m in field.metadata for key in ("ge", "le") if hasattr(m, key)
    }
    choices = get_args(field.annotation) or None
    return Declared(
        name=name,
        default=field.default,
        help=field.description or "",
        flag=extra["flag"],
        widget=extra["widget"],
        label=extra["label"] or name,
        step=extra["step"],
        minimum=bounds.get("ge"),
        maximum=bounds.get("le"),
        choices=tuple(choices) if choices else None,
        layered=bool(extra["layered"]),
        app_default=extra.get("app_default", field.default),
    )
