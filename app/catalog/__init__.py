"""The scenario and criteria catalog: scenarios, criteria and rubrics as data
(scenarios/), validated on load, which criteria a run uses, and the scenario detection."""
