"""Fitting heads on a frozen model's reads: state and likelihood heads, joins, calibrations,
probes."""
