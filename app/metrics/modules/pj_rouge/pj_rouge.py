"""PocketJudge ROUGE: per-pair ROUGE-1/2/L F-measure from Google's rouge-score package."""

from __future__ import annotations

import functools
import unicodedata

import evaluate
from nltk.stem import porter
from rouge_score import rouge_scorer, tokenizers

from app.metrics.module_info import pair_metric_info

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")

# Scripts written without spaces between words: each character is one token.
_CJK_RANGES = (
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x2FA1F),  # CJK Extensions B and later
)

_DESCRIPTION = """\
ROUGE-1, ROUGE-2 and ROUGE-L F-measure of each prediction against its reference, computed by
`rouge_score.rouge_scorer.RougeScorer` with the Porter stemmer. Scores are per pair, in 0..1.

Words are split as rouge-score does for ASCII text (lowercased, alphanumeric runs, Porter stem
for words longer than 3 characters); unlike rouge-score's default tokenizer, words in other
scripts are kept instead of dropped, and CJK characters count as one token each.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the answers to score.
    references (list of str): one reference per answer.
    use_stemmer (bool): Porter-stem ASCII words longer than 3 characters (default True).
Returns:
    rouge1, rouge2, rougeL (list of float): F-measure of each pair, in 0..1.
Examples:
    >>> rouge = evaluate.load("app/metrics/modules/pj_rouge")
    >>> rouge.compute(predictions=["the cat"], references=["the cat"])["rouge1"]
    [1.0]
"""

_CITATION = """\
@inproceedings{lin-2004-rouge,
  title = "{ROUGE}: A Package for Automatic Evaluation of Summaries",
  author = "Lin, Chin-Yew",
  booktitle = "Text Summarization Branches Out",
  year = "2004",
  pages = "74--81",
}
"""


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def _is_separator(char: str) -> bool:
    """Punctuation, symbols, spaces and control characters separate words."""
    return unicodedata.category(char)[0] in "PSZC"


def _spaced(char: str) -> str:
    if _is_separator(char):
        return " "
    return f" {char} " if _is_cjk(char) else char


class UnicodeTokenizer(tokenizers.Tokenizer):
    """rouge-score's default tokenizer on ASCII text, extended to every script."""

    def __init__(self, use_stemmer: bool = True) -> None:
        self._stemmer = porter.PorterStemmer() if use_stemmer else None

    def tokenize(self, text: str) -> list[str]:
        words = "".join(_spaced(char) for char in text.lower()).split()
        return [self._stem(word) for word in words]

    def _stem(self, word: str) -> str:
        if self._stemmer is None or len(word) <= 3 or not word.isascii():
            return word
        return self._stemmer.stem(word)


@functools.cache
def _scorer(use_stemmer: bool) -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer(
        list(ROUGE_TYPES), use_stemmer=use_stemmer, tokenizer=UnicodeTokenizer(use_stemmer)
    )


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PjRouge(evaluate.Metric):
    """ROUGE-1/2/L F-measure per (prediction, reference) pair."""

    def _info(self) -> evaluate.MetricInfo:
        return pair_metric_info(
            _DESCRIPTION,
            _CITATION,
            _KWARGS_DESCRIPTION,
            codebase_urls=["https://github.com/google-research/google-research/tree/master/rouge"],
        )

    def _compute(
        self, predictions: list[str], references: list[str], use_stemmer: bool = True
    ) -> dict[str, list[float]]:
        scorer = _scorer(use_stemmer)
        pairs = zip(predictions, references, strict=True)
        scores = [scorer.score(reference, prediction) for prediction, reference in pairs]
        return {name: [float(score[name].fmeasure) for score in scores] for name in ROUGE_TYPES}
