"""Batches: a run over many rows (the job, its runner, a Ray pool, its progress)."""
