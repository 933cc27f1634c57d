"""Training, merging, export and meta-evaluation of PocketJudge judge models."""
