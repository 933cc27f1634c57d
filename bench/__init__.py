"""`make bench`: speed, memory and label agreement of the judging modes (see bench/run.py)."""
