"""A judge's decision record fitted by one procedure: the training pairs read once by the
engine into one cache (`reads`), and every weight of the record fitted at once (`fit`)."""
