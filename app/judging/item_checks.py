"""What is settled of an item before any model call: its checks, its scenario (when the
classifier picks it), the prompt input it renders, and the decision a critique explains.

The same checks run when judging and when a batch is previewed (`row_problem`), so a
preview flags rows against the settings that will be used.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.catalog.criteria_resolution import AUTO, CriteriaChoice, ResolvedCriteria, resolve
from app.catalog.scenario_detection import ScenarioClassifier, ScenarioGuess, detect_scenarios
from app.catalog.scenarios import Catalog
from app.formats.prompts import PromptTemplate, get_template
from app.judging.config import JudgeConfig
from app.records import JudgeItem, Protocol
from models.backends.base import Backend
from models.foundation.errors import PocketJudgeError, UnknownNameError


@dataclass(frozen=True)
class ItemRules:
    """What the checks and the scenario's choice read of a run, settled once for its items:
    the template looked up (or why it cannot be), the criteria chosen, the reference, and
    who picks a scenario the row leaves open."""

    protocol: Protocol | None  # None: by each row's answer count
    template_name: str
    prompt_template: PromptTemplate | None  # None: unknown, every row's error says so
    choice: CriteriaChoice
    use_reference: bool
    detect_scenario: bool
    classifier: ScenarioClassifier | None

    @classmethod
    def of(cls, config: JudgeConfig) -> ItemRules:
        try:
            template = get_template(config.judge.template)
        except UnknownNameError:
            template = None
        return cls(
            protocol=config.protocol,
            template_name=config.judge.template,
            prompt_template=template,
            choice=config.choice,
            use_reference=config.use_reference,
            detect_scenario=config.detect_scenario,
            classifier=config.parts.classifier,
        )

    def protocol_of(self, item: JudgeItem) -> Protocol:
        return self.protocol if self.protocol is not None else infer_protocol(item)


def infer_protocol(item: JudgeItem) -> Protocol:
    count = len(item.answers)
    return Protocol.SINGLE if count == 1 else Protocol.PAIRWISE if count == 2 else Protocol.MULTI


def row_problem(item: JudgeItem, config: JudgeConfig, catalog: Catalog) -> str | None:
    """Why `item` would be an error row under `config` before any model call, or None.

    The same checks as judging makes (answer count for the protocol, template,
    criteria), so a batch preview can flag rows against the settings that will be used.
    """
    rules = ItemRules.of(config)
    try:
        checked(item, rules.protocol_of(item), rules, catalog)
    except (PocketJudgeError, ValueError) as exc:
        return str(exc)
    return None


def checked(
    item: JudgeItem, protocol: Protocol, rules: ItemRules, catalog: Catalog
) -> tuple[PromptTemplate, ResolvedCriteria]:
    """The template and criteria for `item`; raises when the item cannot be judged so."""
    check_answers(item, protocol, rules.use_reference)
    template = rules.prompt_template or get_template(rules.template_name)  # unknown: raises
    template.check_protocol(protocol)  # native templates have only some protocols
    return template, resolve(rules.choice, item, catalog)


def check_answers(item: JudgeItem, protocol: Protocol, use_reference: bool) -> None:
    """Raises ValueError when the protocol cannot judge this row's answers."""
    count = len(item.answers)
    if protocol is Protocol.PAIRWISE and count != 2:
        raise ValueError(f"pairwise judging needs exactly 2 answers; this row has {count}")
    if protocol is Protocol.MULTI and count < 2:
        raise ValueError(f"multi-answer ranking needs 2 to 6 answers; this row has {count}")
    if protocol is Protocol.ANCHORED and not item.reference:
        raise ValueError("reference-anchored grading needs a 'reference' field in this row")
    if protocol is Protocol.ANCHORED and not use_reference:
        raise ValueError("reference-anchored grading needs the reference: turn references on")


def scenario_guesses(
    backend: Backend, catalog: Catalog, item: JudgeItem, rules: ItemRules
) -> list[ScenarioGuess]:
    """The classifier's guesses when the scenario is left to it, else none."""
    choice = rules.choice
    if not rules.detect_scenario or choice.rubric or item.rubric or item.scenario:
        return []
    if choice.scenario not in (None, AUTO):
        return []
    states = backend.capabilities.states
    reads = getattr(backend, "state_features", None) if states else None
    found = detect_scenarios(
        [item.question],
        list(catalog.scenarios),
        classifier=rules.classifier,
        read_states=reads,
    )
    return found[0] if found else []
