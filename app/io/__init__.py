"""Input and output: read judge rows in many layouts, write judgments as JSONL or CSV."""

from app.io.judgments import read_judgments
from app.io.layouts import LAYOUTS, detect_layout, to_item
from app.io.reader import InputRow, count_rows, read_rows
from app.io.writer import error_judgment, judgment_to_row, to_csv, write_jsonl

__all__ = [
    "LAYOUTS",
    "InputRow",
    "count_rows",
    "detect_layout",
    "error_judgment",
    "judgment_to_row",
    "read_judgments",
    "read_rows",
    "to_csv",
    "to_item",
    "write_jsonl",
]
