"""What the decision fit chooses among, and how: training/configs/decision_fit.yaml, validated.

Its own module so the reads (training/decision/reads.py) can read every candidate without
importing the fit, which imports them."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.deciding.decision import Declared, DeclaredRule, Fitted, Signal
from models.foundation.datafiles import read_mapping, validate
from training.decision.in_sample import FITS

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "decision_fit.yaml"


class FitConfig(BaseModel):
    """What the fit chooses among, and how (training/configs/decision_fit.yaml)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge: str
    folds: int = Field(default=5, ge=2)
    strengths: tuple[float, ...] = Field(min_length=1)  # L2: C, larger is weaker
    min_gain: float = Field(ge=0.0)
    price_per_second: float = Field(ge=0.0)
    signals: tuple[Declared, ...] = Field(min_length=1)  # the candidates
    rules: tuple[DeclaredRule, ...] = ()
    shares: dict[str, str] = Field(default_factory=dict)  # each share's words, for the page
    # a signal whose own weights were fitted on training pairs -> that fit (in_sample.FITS):
    # its value is in-sample on those pairs, so they leave this fit
    fitted_on: dict[str, str] = Field(default_factory=dict)
    # signals whose weights are kept as the judge's record holds them (fitted by the fits it
    # names): the other weights are fitted around their sum, an offset
    held: tuple[str, ...] = ()
    # the most a candidate may cost a pair on one core (its `seconds`): dearer ones are not tried
    max_seconds: float | None = Field(default=None, ge=0.0)
    # the criterion shift's scale: the verdict head's logits per level point of the criterion
    # head's lead, measured on its own training pairs (training/configs/decision_fit.yaml says
    # where); None: the judge has no criterion head to shift
    logits_per_level: float | None = Field(default=None, gt=0.0)
    # the candidates of a record's rubric_grade and criterion_shift (each answer's own value)
    rubric_signals: tuple[Declared, ...] = ()
    shift_signals: tuple[Declared, ...] = ()

    @model_validator(mode="after")
    def _known_names(self) -> FitConfig:
        for signal, name in self.fitted_on.items():
            if name not in FITS:
                raise ValueError(f"fitted_on.{signal}: unknown fit '{name}' ({', '.join(FITS)})")
        candidates = {s.name for s in self.signals}
        for name in self.held:
            if name not in candidates:
                raise ValueError(f"held: '{name}' is not one of the signals")
        return self

    def fitted_signal(
        self,
        section: str,
        name: str,
        weight: float,
        fitted: Fitted,
        bounds: tuple[float, float] | None = None,
    ) -> Signal:
        """The candidate `name` of `section` ("rubric_signals" or "shift_signals") as its
        record weighs it: as declared here, with its `weight`, `fitted` and `bounds`."""
        declared = {s.name: s for s in getattr(self, section)}
        if name not in declared:
            raise ValueError(f"{section}: no candidate '{name}' in {CONFIG.name}")
        data = declared[name].model_dump() | {"weight": weight, "fitted": fitted}
        return Signal.model_validate(data | {"bounds": bounds})

    def free(self) -> list[str]:
        """The candidates this fit weighs (those it does not hold, within `max_seconds`)."""
        bound = self.max_seconds
        return [
            s.name
            for s in self.signals
            if s.name not in self.held and (bound is None or s.seconds <= bound)
        ]

    def own_answer_part(self) -> FitConfig:
        """This fit of the judge's own answer's candidates alone, around the held signals: no
        pair has both a reference in use and the judge's own answer, so they are fitted apart
        (one L2 strength for both shrank the reference's weights)."""
        kept = [s for s in self.signals if s.own_answer or s.name in self.held]
        return self.model_copy(update={"signals": kept, "rules": []})

    def reward_part(self) -> FitConfig:
        """This fit of the reward model's candidates alone, around the held signals: they can
        be fitted only on the requests the reward model never trained on (its loan's held-out
        fold, training/decision/reward_reads.py), which no other part's pairs are."""
        kept = [s for s in self.signals if "reward" in s.reads or s.name in self.held]
        return self.model_copy(update={"signals": kept, "rules": []})

    def main_part(self) -> FitConfig:
        """This fit without the candidates fitted apart (the reward model's)."""
        kept = [s for s in self.signals if "reward" not in s.reads]
        return self.model_copy(update={"signals": kept})


def load_config(path: Path = CONFIG) -> FitConfig:
    return validate(FitConfig, read_mapping(path), path)
