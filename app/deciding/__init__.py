"""How a verdict, a grade or a ranking is decided from what the judge model gave:
its reply or its probabilities, a head on its states, both answer orders merged,
request relevance and a calibration of its confidence."""
