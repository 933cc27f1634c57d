"""The types of a judge's verdict settings, as a registry entry declares them.

They live with the registry (the models layer) so it needs nothing of the core; the core
(app/deciding/verdicts.py, app/deciding/relevance.py) applies them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

# How the two orders of a pair make one verdict: "agree" (a verdict both orders give, else a
# flagged tie) or "calibrated" (both orders' probabilities or expected scores averaged).
PairCombine = Literal["agree", "calibrated"]


class RelevanceJoin(BaseModel):
    """Weights of a pairwise verdict joined with request relevance (app/deciding/relevance.py):
    P(A) = sigmoid(margin * (P(A) - P(B)) + relevance * (cos(request, A) - cos(request, B)))."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    margin: float
    relevance: float
