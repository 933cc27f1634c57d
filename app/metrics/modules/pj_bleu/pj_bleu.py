"""PocketJudge BLEU: per-pair sentence BLEU and corpus BLEU from sacrebleu, in 0..1."""

from __future__ import annotations

import re

import evaluate
import sacrebleu

from app.metrics.module_info import pair_metric_info

# Han, Hiragana, Katakana: texts without spaces between words get sacrebleu's "zh" tokenizer,
# which splits these characters one by one and tokenizes everything else like "13a".
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

_DESCRIPTION = """\
BLEU of each prediction against its reference (`sacrebleu.sentence_bleu` with effective n-gram
order, so short answers are not zeroed for lacking 4-grams) and of the whole set
(`sacrebleu.corpus_bleu`). sacrebleu's 0..100 scores are divided by 100.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the answers to score.
    references (list of str): one reference per answer.
    tokenize (str or None): sacrebleu tokenizer; None picks "zh" when any text has CJK
        characters, else sacrebleu's default "13a".
    lowercase (bool): case-insensitive BLEU (default False).
Returns:
    bleu (list of float): sentence BLEU of each pair, in 0..1.
    corpus_bleu (float): corpus BLEU of all pairs, in 0..1.
Examples:
    >>> bleu = evaluate.load("app/metrics/modules/pj_bleu")
    >>> bleu.compute(predictions=["Paris."], references=["Paris."])["bleu"]
    [1.0]
"""

_CITATION = """\
@inproceedings{post-2018-call,
  title = "A Call for Clarity in Reporting {BLEU} Scores",
  author = "Post, Matt",
  booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
  year = "2018",
  pages = "186--191",
}
"""


def default_tokenizer(texts: list[str]) -> str:
    """sacrebleu tokenizer for these texts: "zh" if any has CJK characters, else "13a"."""
    return "zh" if any(_CJK.search(text) for text in texts) else "13a"


def _unit(score: float) -> float:
    """sacrebleu 0..100 to 0..1, clipping float noise such as 100.00000000000004."""
    return min(1.0, max(0.0, score / 100.0))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PjBleu(evaluate.Metric):
    """Sentence BLEU per (prediction, reference) pair, plus corpus BLEU."""

    def _info(self) -> evaluate.MetricInfo:
        return pair_metric_info(
            _DESCRIPTION,
            _CITATION,
            _KWARGS_DESCRIPTION,
            codebase_urls=["https://github.com/mjpost/sacrebleu"],
        )

    def _compute(
        self,
        predictions: list[str],
        references: list[str],
        tokenize: str | None = None,
        lowercase: bool = False,
    ) -> dict[str, list[float] | float]:
        tokenize = tokenize or default_tokenizer([*predictions, *references])
        options = {"tokenize": tokenize, "lowercase": lowercase}
        sentence = [
            sacrebleu.sentence_bleu(prediction, [reference], use_effective_order=True, **options)
            for prediction, reference in zip(predictions, references, strict=True)
        ]
        corpus = sacrebleu.corpus_bleu(predictions, [references], **options)
        return {
            "bleu": [_unit(bleu.score) for bleu in sentence],
            "corpus_bleu": _unit(corpus.score),
        }
