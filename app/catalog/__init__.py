"""The scenario and criteria catalog: scenarios, criteria and rubrics as data
(scenarios/), validated on load; the scoring rule a set of criteria makes (their
scales, weights and overall); and the scenario detection."""
