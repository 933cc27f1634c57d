"""Answers' code run beside a reference function: the code read out of answers
(answers.py), the inputs tried (inputs.py), the jail (jail.py) and its child (child.py),
the runs and their comparison (runner.py), and the reading a verdict weighs (behaviour.py)."""
