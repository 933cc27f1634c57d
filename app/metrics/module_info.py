"""What the three metric modules (app/metrics/modules/) tell `evaluate` about themselves:
one string prediction against one string reference each, and their own texts and links."""

from __future__ import annotations

import datasets
import evaluate


def pair_metric_info(
    description: str, citation: str, inputs_description: str, **links: list[str]
) -> evaluate.MetricInfo:
    """A metric of (prediction, reference) string pairs; `links`: codebase_urls, ..."""
    return evaluate.MetricInfo(
        description=description,
        citation=citation,
        inputs_description=inputs_description,
        features=datasets.Features(
            {
                "predictions": datasets.Value("string", id="sequence"),
                "references": datasets.Value("string", id="sequence"),
            }
        ),
        **links,
    )
