"""Meta-evaluation against labels, beside the length heuristic, and its reports."""
