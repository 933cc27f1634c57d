"""How a verdict, a grade or a ranking is decided from what the judge model gave:
its reply or its probabilities, a head on its states, both answer orders, relevance, a
calibration of its confidence and a second judge for the unsure ones."""
