"""Self-contained HTML reports to share or archive: one stored run (`run_report`) and a
comparison of two (`comparison_report`).

    Path("run.html").write_text(run_report(store.get(run_id), store.rows(run_id)))

Each report is one HTML document that opens offline. plotly.js is inlined once and every
chart is a plotly figure drawn from the data embedded next to it; a Content-Security-Policy
lets the page load nothing from anywhere (no CDN, font, image or request). plotly.js's own
links (its logo, map attributions) are written `href= "..."`, so that a search of the file
for `href="http` or `src="http` finds nothing at all.

Every text that came from a user or a model (questions, feedback, ids, model and file
names, settings) is HTML-escaped, chart labels included (plotly reads a little HTML in
them), so a feedback holding `<script>` shows as text and never runs. A section with
nothing to show (no scores, no answer models, no problem rows) is left out.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cache
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from app import __version__
from app.catalog.scenarios import Catalog, load_catalog
from app.records import JudgeItem, Judgment, Protocol, Status
from app.reports import charts
from app.reports.dashboard import Dashboard, summarize
from app.reports.leaderboard import ModelStanding, leaderboard
from app.runs.compare import RunComparison, decision_text
from app.runs.store import RunInfo, StoredRow

HASH_CHARS = 12  # of an input file's hash shown
CHART_HEIGHT = 400  # px, for a figure that sets no height of its own
_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)
_ALWAYS_APART = {"Run", "Started", "Finished"}  # settings not marked when they differ
_PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
_EXTERNAL_LINK = re.compile(r"\b(href|src)=(?=[\"']https?:)", re.IGNORECASE)
_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328;
  margin: 0; background: #fff; line-height: 1.45; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 32px 48px; }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.25rem; margin: 32px 0 8px; border-bottom: 1px solid #d0d7de;
  padding-bottom: 4px; }
h3 { font-size: 1.05rem; margin: 16px 0 6px; }
.meta, .note { color: #59636e; font-size: 0.9rem; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.9rem; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; text-align: left; vertical-align: top;
  white-space: nowrap; }
th { background: #f6f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.differs td { background: #fff8c5; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; max-width: 48ch; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(480px, 1fr));
  gap: 16px; margin-top: 12px; }
.chart { border: 1px solid #d0d7de; border-radius: 6px; padding: 4px; min-width: 0; }
details summary { cursor: pointer; color: #0969da; margin: 8px 0; }
"""


class _Html(str):
    """Markup made here from escaped parts: put in a page as is."""


def run_report(run: RunInfo, rows: Sequence[StoredRow]) -> str:
    """One stored run as a complete HTML document (see the module docstring)."""
    catalog = load_catalog()
    items = [row.item for row in rows]
    judgments = [row.judgment for row in rows]
    dash = summarize(items, judgments, catalog)
    pairwise = _is_pairwise(run, judgments)
    body = [
        f"<h1>Run {_e(run.id)}</h1>",
        f'<p class="meta">{_e(_run_line(run))} &middot; report by PocketJudge {_e(__version__)}'
        "</p>",
        "<h2>Settings</h2>",
        _key_value_table(_run_settings(run, dash)),
        _other_settings(run.settings),
        _results_section(dash, pairwise, catalog),
        _groups_section(dash, pairwise),
        _leaderboard_section(items, judgments),
        _problems_section(dash),
        _rows_section(rows),
    ]
    if not rows:
        body.append('<p class="note">This run has no judged rows stored.</p>')
    return _document(f"PocketJudge run {run.id}", body)


def comparison_report(comparison: RunComparison) -> str:
    """Two runs compared (`app.runs.compare.compare_runs`) as a complete HTML document."""
    a, b = comparison.run_a, comparison.run_b
    catalog = load_catalog()
    body = [
        f"<h1>Run {_e(a.id)} (A) vs run {_e(b.id)} (B)</h1>",
        f'<p class="meta">Score changes are B minus A over the rows both runs judged ok '
        f"&middot; report by PocketJudge {_e(__version__)}</p>",
        "<h2>Settings</h2>",
        _side_by_side(_key_settings(a) + _counts(a.counts), _key_settings(b) + _counts(b.counts)),
        "<h2>Agreement</h2>",
        _key_value_table(_agreement(comparison)),
        _deltas_section(comparison, catalog),
        _flips_section(comparison),
        _leaderboards_section(comparison),
    ]
    return _document(f"PocketJudge runs {a.id} vs {b.id}", body)


# -- the run report's sections ---------------------------------------------------------


def _is_pairwise(run: RunInfo, judgments: Sequence[Judgment]) -> bool:
    if run.protocol:
        return run.protocol == Protocol.PAIRWISE.value
    return any(j.protocol is Protocol.PAIRWISE for j in judgments)


def _run_line(run: RunInfo) -> str:
    ended = f", finished {run.finished}" if run.finished else ""
    return f"{run.status.capitalize()}: started {run.started}{ended}"


def _key_settings(run: RunInfo) -> list[tuple[str, Any]]:
    """What a run judged and with what, as (label, value)."""
    versions = run.versions
    return [
        ("Run", run.id),
        ("Status", run.status),
        ("Source", run.source),
        ("Started", run.started),
        ("Finished", run.finished),
        ("Judge model", run.model),
        ("Template", run.template),
        ("Protocol", run.protocol),
        ("Scenario", run.scenario),
        ("Input file", run.input_name),
        ("Input hash", run.input_hash[:HASH_CHARS] if run.input_hash else None),
        ("Rows in the input", run.total),
        ("PocketJudge version", versions.get("pocketjudge")),
        ("Template version", versions.get("template")),
        ("Model file", _model_file(versions.get("model_file"))),
    ]


def _model_file(value: Any) -> str | None:
    if isinstance(value, Mapping) and "name" in value:
        size = value.get("bytes")
        return f"{value['name']} ({size / 1e6:,.1f} MB)" if size else str(value["name"])
    return None if value is None else _plain(value)


def _counts(counts: Mapping[str, int]) -> list[tuple[str, Any]]:
    return [(f"Rows {status}", counts.get(status)) for status in ("ok", "unparsed", "error")]


def _run_settings(run: RunInfo, dash: Dashboard) -> list[tuple[str, Any]]:
    consistency = dash.position_consistency
    return [
        *_key_settings(run),
        ("Rows judged", dash.total),
        *_counts(dash.status_counts),
        ("Mean confidence", _number(dash.mean_confidence)),
        ("Position consistency", None if consistency is None else f"{100 * consistency:.0f}%"),
    ]


def _other_settings(settings: Mapping[str, Any]) -> str:
    shown = [(k, _text(_plain(v))) for k, v in sorted(settings.items()) if v is not None]
    if not shown:
        return ""
    return (
        f"<details><summary>Every judging setting ({len(shown)})</summary>"
        f"{_key_value_table(shown)}</details>"
    )


def _results_section(dash: Dashboard, pairwise: bool, catalog: Catalog) -> str:
    names = {key: _criterion_name(key, catalog) for key in dash.criterion_means}
    groups = {g: s.mean_overall for g, s in dash.by_group.items() if s.mean_overall is not None}
    figures = [
        _figure(charts.verdict_counts, dash.verdicts)
        if pairwise
        else _figure(charts.score_distribution, dash.overall_scores),
        _figure(
            charts.bars,
            _labels({names[k]: v for k, v in dash.criterion_means.items()}),
            "Mean score per criterion",
            "mean score",
            horizontal=True,
        ),
        _figure(charts.bars, _labels(groups), "Mean overall score by scenario group", "mean"),
    ]
    return _section("Results", _charts(figures))


def _groups_section(dash: Dashboard, pairwise: bool) -> str:
    headers = ["Scenario group", "Rows", "OK", "Mean overall"]
    if pairwise:
        headers += ["A wins", "B wins", "Ties", "Uncertain"]
    rows = []
    for name, group in dash.by_group.items():
        row: list[Any] = [name, group.count, group.ok, _number(group.mean_overall)]
        if pairwise:
            row += [group.verdicts.get(k, 0) for k in ("A", "B", "tie", "uncertain")]
        rows.append(row)
    return _section("By scenario group", _table(headers, rows) if rows else "")


def _leaderboard_section(items: Sequence[JudgeItem | None], judgments: Sequence[Judgment]) -> str:
    if not any(item is not None and item.answer_models for item in items):
        return ""
    try:
        standings = leaderboard(items, judgments)
    except ValueError as exc:
        return _section("Model leaderboard", f'<p class="note">Not shown: {_e(str(exc))}</p>')
    if not standings:
        return ""
    figures = [
        _figure(charts.leaderboard_grades, _escaped(standings)),
        _figure(charts.leaderboard_strengths, _escaped(standings)),
    ]
    return _section("Model leaderboard", _leaderboard_table(standings) + _charts(figures))


def _problems_section(dash: Dashboard) -> str:
    rows = [[p.line, p.id, p.status, _text(p.error)] for p in dash.problem_rows]
    if not rows:
        return ""
    note = '<p class="note">Unparsed rows keep the raw output; error rows say what to fix.</p>'
    return _section("Rows to inspect", note + _table(["Line", "Id", "Status", "Error"], rows))


def _rows_section(rows: Sequence[StoredRow]) -> str:
    """Every row's question, decision and feedback, folded away."""
    if not rows:
        return ""
    headers = ["Line", "Id", "Question", "Status", "Decision", "Confidence", "Feedback"]
    table = _table(
        headers,
        (
            [
                row.judgment.line,
                row.judgment.id,
                _text(row.item.question if row.item is not None else None),
                row.judgment.status.value,
                decision_text(row.judgment) if row.judgment.status is Status.OK else None,
                _number(row.judgment.confidence),
                _text(row.judgment.feedback),
            ]
            for row in rows
        ),
    )
    return _section(
        "Rows", f"<details><summary>Every judged row ({len(rows)})</summary>{table}</details>"
    )


# -- the comparison report's sections ----------------------------------------------------


def _agreement(comparison: RunComparison) -> list[tuple[str, Any]]:
    agreement = comparison.agreement
    same = comparison.same_inputs
    return [
        ("Agreement", None if agreement is None else f"{agreement:g}%"),
        ("Rows both judged ok", comparison.common),
        ("Rows only in A", comparison.only_a),
        ("Rows only in B", comparison.only_b),
        ("Flips", len(comparison.flips)),
        ("Overall score change (B - A)", _number(comparison.overall_delta, signed=True)),
        ("Same input file", "yes (same hash)" if same else "no: the input files differ"),
    ]


def _deltas_section(comparison: RunComparison, catalog: Catalog) -> str:
    criteria = {_criterion_name(k, catalog): v for k, v in comparison.criterion_deltas.items()}
    figures = [
        _figure(
            charts.bars,
            _labels(criteria),
            "Score change per criterion (B - A)",
            "mean change",
            horizontal=True,
        ),
        _figure(
            charts.bars,
            _labels(comparison.group_deltas),
            "Overall score change by scenario group (B - A)",
            "mean change",
        ),
    ]
    return _section("Score changes", _charts(figures))


def _flips_section(comparison: RunComparison) -> str:
    if not comparison.flips:
        return ""
    headers = ["Id", "Question", "Decision A", "Decision B", "Feedback A", "Feedback B"]
    rows = [
        [
            flip.id,
            _text(flip.question),
            flip.decision_a,
            flip.decision_b,
            _text(flip.feedback_a),
            _text(flip.feedback_b),
        ]
        for flip in comparison.flips
    ]
    note = f'<p class="note">{len(rows)} rows where the runs decided differently.</p>'
    return _section("Flips", note + _table(headers, rows))


def _leaderboards_section(comparison: RunComparison) -> str:
    boards = [
        (comparison.run_a, comparison.leaderboard_a),
        (comparison.run_b, comparison.leaderboard_b),
    ]
    if not any(standings for _, standings in boards):
        return ""
    parts = [
        f"<h3>{label}: run {_e(run.id)}</h3>"
        + (_leaderboard_table(standings) or '<p class="note">No answer models named.</p>')
        for label, (run, standings) in zip(("A", "B"), boards)
    ]
    return _section("Model leaderboards", "".join(parts))


# -- building blocks ---------------------------------------------------------------------


def _leaderboard_table(standings: Sequence[ModelStanding]) -> str:
    headers = ["#", "Model", "Answers", "Graded", "Mean grade", "95% CI", "Wins", "Ties"]
    headers += ["Losses", "Win rate", "BT strength"]
    rows = [
        [
            rank,
            s.name,
            s.answers,
            s.graded,
            _number(s.mean_grade),
            "-" if s.ci_low is None else f"{s.ci_low:.2f} - {s.ci_high:.2f}",
            s.wins,
            s.ties,
            s.losses,
            None if s.win_rate is None else f"{100 * s.win_rate:.0f}%",
            _number(s.bt_strength),
        ]
        for rank, s in enumerate(standings, start=1)
    ]
    return _table(headers, rows) if rows else ""


def _side_by_side(a: Sequence[tuple[str, Any]], b: Sequence[tuple[str, Any]]) -> str:
    """A table of label | run A | run B; the rows where the runs differ are marked."""
    rows = []
    for (label, value_a), (_, value_b) in zip(a, b):
        if value_a is None and value_b is None:
            continue
        marked = ' class="differs"' if label not in _ALWAYS_APART and value_a != value_b else ""
        rows.append(f"<tr{marked}><th>{_e(label)}</th>{_td(value_a)}{_td(value_b)}</tr>")
    head = "<tr><th></th><th>Run A</th><th>Run B</th></tr>"
    return f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def _key_value_table(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = [f"<tr><th>{_e(k)}</th>{_td(v)}</tr>" for k, v in pairs if v is not None]
    return f"<table><tbody>{''.join(rows)}</tbody></table>"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(f"<tr>{''.join(_td(v) for v in row)}</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _td(value: Any) -> str:
    if isinstance(value, _Html):
        return f"<td>{value}</td>"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f'<td class="num">{value:g}</td>'
    return f"<td>{_e('-' if value is None else str(value))}</td>"


def _section(title: str, content: str) -> str:
    return f"<section><h2>{_e(title)}</h2>{content}</section>" if content else ""


def _figure(build: Callable[..., go.Figure], *args: Any, **kwargs: Any) -> str | None:
    """The figure as an HTML fragment (no plotly.js); None when it has nothing to draw."""
    try:
        figure = build(*args, **kwargs)
    except ValueError:
        return None
    return figure.to_html(
        full_html=False,
        include_plotlyjs=False,
        config=_PLOTLY_CONFIG,
        default_height=f"{figure.layout.height or CHART_HEIGHT}px",
    )


def _charts(figures: Iterable[str | None]) -> str:
    drawn = [f'<div class="chart">{figure}</div>' for figure in figures if figure is not None]
    return f'<div class="charts">{"".join(drawn)}</div>' if drawn else ""


def _document(title: str, body: Iterable[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title>",
            f"<style>{_CSS}</style>",
            f"<script>{_plotly_js()}</script>",
            "</head>",
            "<body><main>",
            *(part for part in body if part),
            "</main></body>",
            "</html>",
        ]
    )


@cache
def _plotly_js() -> str:
    return _EXTERNAL_LINK.sub(r"\1= ", get_plotlyjs())


def _criterion_name(key: str, catalog: Catalog) -> str:
    return catalog.criteria[key].name if key in catalog.criteria else key


def _labels(values: Mapping[str, float]) -> dict[str, float]:
    """Chart values under escaped labels (plotly shows the entities as the characters)."""
    return {_e(key): value for key, value in values.items()}


def _escaped(standings: Sequence[ModelStanding]) -> list[ModelStanding]:
    return [replace(s, name=_e(s.name)) for s in standings]


def _text(value: str | None) -> _Html:
    """A long text (question, feedback) in a cell, its line breaks kept."""
    return _Html(f'<div class="text">{_e("-" if value is None else value)}</div>')


def _number(value: float | None, *, signed: bool = False) -> str | None:
    if value is None:
        return None
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _e(text: str) -> str:
    return html.escape(text, quote=True)
