"""How one item is judged: its checks, its prompts fitted to the context, its plan, and
the deciders (from the model's reply, or from a head on its states and likelihoods) that
the service (app/judging/service.py) runs over rows."""
