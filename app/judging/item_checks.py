"""What is settled of an item before any model call: its checks, its scenario (when the
classifier picks it), the prompt input it renders, and the decision a critique explains.

The same checks run when judging and when a batch is previewed (`row_problem`), so a
preview flags rows against the settings that will be used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from app.catalog.criteria_resolution import AUTO, ResolvedCriteria, resolve
from app.catalog.scenario_detection import ScenarioGuess, detect_scenarios
from app.catalog.scenarios import Catalog
from app.formats.prompts import AnswerSlot, PromptInput, PromptTemplate, get_template
from app.formats.text_fitting import fit_texts
from app.judging.config import JudgeConfig
from app.records import JudgeItem, Judgment, Protocol
from models.backends.base import Backend
from models.foundation.errors import PocketJudgeError, UnknownNameError

PAIR_LABELS = ("A", "B")


def infer_protocol(item: JudgeItem) -> Protocol:
    count = len(item.answers)
    return Protocol.SINGLE if count == 1 else Protocol.PAIRWISE if count == 2 else Protocol.MULTI


def row_problem(item: JudgeItem, config: JudgeConfig, catalog: Catalog) -> str | None:
    """Why `item` would be an error row under `config` before any model call, or None.

    The same checks as judging makes (answer count for the protocol, template,
    criteria), so a batch preview can flag rows against the settings that will be used.
    """
    if config.protocol is None:
        config = replace(config, protocol=infer_protocol(item))
    try:
        checked(item, config, catalog)
    except (PocketJudgeError, ValueError) as exc:
        return str(exc)
    return None


def checked(
    item: JudgeItem, config: JudgeConfig, catalog: Catalog
) -> tuple[PromptTemplate, ResolvedCriteria]:
    """The template and criteria for `item`; raises when the item cannot be judged so."""
    check_answers(item, config)
    template = get_template(config.judge.template)
    assert config.protocol is not None
    template.check_protocol(config.protocol)  # native templates have only some protocols
    return template, resolve(config.choice, item, catalog)


def check_answers(item: JudgeItem, config: JudgeConfig) -> None:
    """Raises ValueError when the protocol cannot judge this row's answers."""
    protocol = config.protocol
    count = len(item.answers)
    if protocol is Protocol.PAIRWISE and count != 2:
        raise ValueError(f"pairwise judging needs exactly 2 answers; this row has {count}")
    if protocol is Protocol.MULTI and count < 2:
        raise ValueError(f"multi-answer ranking needs 2 to 6 answers; this row has {count}")
    if protocol is Protocol.ANCHORED and not item.reference:
        raise ValueError("reference-anchored grading needs a 'reference' field in this row")
    if protocol is Protocol.ANCHORED and not config.use_reference:
        raise ValueError("reference-anchored grading needs the reference: turn references on")


def native_generate(config: JudgeConfig) -> JudgeConfig:
    """`config` as a native template judges: in generate mode, whatever mode was asked
    for, since score mode reads values from a JSON reply and a native reply is free text
    (each judgment records mode "generate"); the template's stop strings added."""
    try:
        template = get_template(config.judge.template)
    except UnknownNameError:
        return config  # every row's plan reports the unknown template
    if not template.native:
        return config
    stop = config.sampling.stop + tuple(s for s in template.stop if s not in config.sampling.stop)
    return replace(config, mode="generate", sampling=replace(config.sampling, stop=stop))


def prompt_input(
    protocol: Protocol,
    question: str,
    answers: Sequence[str],
    reference: str | None,
    resolved: ResolvedCriteria,
    max_input_chars: int | None,
) -> PromptInput:
    """What the template renders for answers in this order, texts cut to fit.

    Training renders its examples through this too (training/datasets/examples.py), so a
    trained judge sees exactly the prompts it meets at inference.
    """
    texts = fit_texts([question, reference or "", *answers], max_input_chars)
    labels = PAIR_LABELS if protocol is Protocol.PAIRWISE else _numbers(len(answers))
    return PromptInput(
        protocol=protocol,
        question=texts[0],
        answers=tuple(AnswerSlot(label, text) for label, text in zip(labels, texts[2:])),
        rule=resolved.rule,
        reference=texts[1] or None,
        scenario=resolved.scenario,
    )


def _numbers(count: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(1, count + 1))


def scenario_guesses(
    backend: Backend, catalog: Catalog, item: JudgeItem, config: JudgeConfig
) -> list[ScenarioGuess]:
    """The classifier's guesses when the scenario is left to it, else none."""
    choice = config.choice
    if not config.detect_scenario or choice.rubric or item.rubric or item.scenario:
        return []
    if choice.scenario not in (None, AUTO):
        return []
    states = backend.capabilities.states
    reads = getattr(backend, "state_features", None) if states else None
    found = detect_scenarios(
        [item.question],
        list(catalog.scenarios),
        classifier=config.parts.classifier,
        read_states=reads,
    )
    return found[0] if found else []


def decision_of(judgment: Judgment) -> str | tuple[int, ...] | None:
    """The decision a critique must explain (a pair's leaning even when uncertain)."""
    if judgment.protocol is Protocol.PAIRWISE:
        return judgment.leaning or (judgment.winner if judgment.winner != "uncertain" else None)
    if judgment.protocol is Protocol.MULTI:
        return judgment.ranking
    if judgment.answers and len(judgment.answers) == 1:
        return str(round(judgment.answers[0].overall))
    return None
