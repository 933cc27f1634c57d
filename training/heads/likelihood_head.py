"""Fit a likelihood head: a verdict from the frozen model's likelihoods of each answer and its
states read in the same pass (issue 29).

    python -m training.heads.likelihood_head read --gguf models/store/X.gguf --part 0 --parts 2
    python -m training.heads.likelihood_head read --gguf models/store/X.gguf --part 1 --parts 2
    python -m training.heads.likelihood_head read --gguf models/store/X.gguf --evaluation \\
        --part 0 --parts 2
    python -m training.heads.likelihood_head fit --gguf models/store/X.gguf --out models/judges/NAME
    python -m training.heads.likelihood_head grades --gguf models/store/X.gguf \\
        --out models/judges/NAME

`read` reads the fitting set (training split only: training/datasets/state_head_data.py, with
more AlpacaEval pairs) with the frozen GGUF into a resumable cache
(training/device/reading_cache.py): each answer as the model's reply after its request (token
log-probabilities and states) and after an empty request. The work is shuffled once
(seeded), so whatever share of it is read is a fair sample of every source.
With `--evaluation` it reads the evaluation files' pairs instead (Auto-J dev, LLMBar natural
and neighbour, the held-out reference-decided pairs) into a cache of their own
(`training/decision/cache/evaluation/`), never fitted on: a head fitted again is measured on
them without judging the files again. `fit` uses the pairs read so far; see `fit` for what it
chooses and how. `grades` fits the grade head again on the single rows read so far, the
pairwise head left as it is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from training.datasets.likelihood_data import (
    ALPACAEVAL_PAIRS,
    EVALUATION_CACHE_DIR,
    PER_REQUEST,
    cache_for,
    work_order,
)


def read(args: argparse.Namespace) -> int:
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from models.readings import pooled
    from training.decision.measure import evaluation_order

    evaluation = args.evaluation
    texts = evaluation_order() if evaluation else work_order(args.alpacaeval, args.per_request)
    questions = sorted({q for q, _ in texts})
    mine = set(questions[args.part :: args.parts])  # a question's answers in one process
    texts = [t for t in texts if t[0] in mine]
    backend = LlamaCppBackend(str(args.gguf), BackendOptions(n_ctx=512, n_threads=args.threads))

    def read_cond(question: str, answer: str) -> tuple[np.ndarray, np.ndarray]:
        reading = backend.read_reply(question, answer)
        return reading.logprobs, pooled(reading.states)

    def read_uncond(answer: str) -> np.ndarray:
        return backend.read_reply("", answer, states=False).logprobs

    cache = args.cache or (EVALUATION_CACHE_DIR / args.gguf.stem if evaluation else None)
    cache_for(args.gguf, cache).fill(texts, read_cond, read_uncond, f"part{args.part}")
    print(f"{len(texts)} answers read into the cache of {args.gguf.name}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.heads.likelihood_head", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("read", "fit", "grades"):
        command = commands.add_parser(name)
        command.add_argument("--gguf", type=Path, required=True)
        command.add_argument("--alpacaeval", type=int, default=ALPACAEVAL_PAIRS)
        command.add_argument(
            "--per-request", type=int, default=PER_REQUEST, help="AlpacaEval pairs per instruction"
        )
        command.add_argument(
            "--cache", type=Path, help="the reading cache (default: the GGUF's under the run)"
        )
    read_command = commands.choices["read"]
    read_command.add_argument("--part", type=int, default=0)
    read_command.add_argument("--parts", type=int, default=1)
    read_command.add_argument("--threads", type=int, default=1)
    read_command.add_argument(
        "--evaluation", action="store_true", help="read the evaluation files' pairs instead"
    )
    commands.choices["fit"].add_argument(
        "--out", type=Path, required=True, help="the judge's folder"
    )
    commands.choices["grades"].add_argument(
        "--out", type=Path, required=True, help="the folder of a judge `fit` wrote"
    )
    args = parser.parse_args(argv)
    if args.command == "read":
        return read(args)
    from training.heads.likelihood_fit import fit, refit_grades

    return fit(args) if args.command == "fit" else refit_grades(args)


if __name__ == "__main__":
    sys.exit(main())
