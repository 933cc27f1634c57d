"""The README keeps its promises: it stays short, its links resolve, the make targets
and command-line options it names exist, and the command lines of "Judging from the
command line" run as written (on the tiny test model instead of the default judge)."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path

import pytest

from app import cli

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINKED_DOCS = (README, ROOT / "docs" / "reference.md")
MAX_LINES = 350

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`([^`]+)`")
EXITS = re.compile(r"#.*\bexits (\d+)\b")


def _text(path: Path = README) -> str:
    return path.read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return FENCE.sub("", text)


def _section(heading: str) -> str:
    text = _text()
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _bash_blocks(text: str) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if lang in ("bash", "sh")]


def _command_lines(block: str) -> list[str]:
    """The block's lines, with backslash continuations joined."""
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def _app_args(line: str) -> list[str] | None:
    """The arguments after `python -m app` on a command line, else None."""
    words = shlex.split(line, comments=True)
    for i in range(len(words) - 2):
        if words[i].endswith("python") and words[i + 1 : i + 3] == ["-m", "app"]:
            return words[i + 3 :]
    return None


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", _prose(_text(path)), re.M)}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                found.update({f"{name} {k}": v for k, v in _subcommands(sub).items()})
    return found


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


PARSER = cli._parser()
SUBCOMMANDS = _subcommands(PARSER)
ALL_OPTIONS = set().union(_options(PARSER), *(_options(sub) for sub in SUBCOMMANDS.values()))


def test_the_readme_is_short() -> None:
    lines = _text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES})"


@pytest.mark.parametrize("doc", LINKED_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    targets = LINK.findall(_prose(_text(doc)))
    assert targets
    for target in targets:
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        assert linked.exists(), f"{doc.name}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{doc.name}: no heading #{anchor} in {linked.name}"


def test_every_make_target_named_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", makefile, re.M))
    text = _text()
    code = [body for _, body in FENCE.findall(text)] + INLINE_CODE.findall(_prose(text))
    named = {name for snippet in code for name in re.findall(r"\bmake ([a-z][\w-]*)", snippet)}
    assert {"run", "test"} <= named
    assert named <= targets, f"not in the Makefile: {sorted(named - targets)}"


def test_every_app_command_line_parses() -> None:
    """Every `python -m app ...` line in the README's shell blocks is a valid command line."""
    checked = 0
    for block in _bash_blocks(_text()):
        for line in _command_lines(block):
            args = _app_args(line)
            if args is None:
                continue
            try:
                PARSER.parse_args(args)
            except SystemExit as exc:  # argparse's way of refusing
                pytest.fail(f"`{line.strip()}` does not parse (exit {exc.code})")
            checked += 1
    assert checked >= 10


def test_every_option_named_in_the_prose_exists() -> None:
    spans = INLINE_CODE.findall(_prose(_text()))
    named = {flag for span in spans for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", span)}
    assert "--no-criteria" in named
    assert named <= ALL_OPTIONS, f"no such option of `python -m app`: {sorted(named - ALL_OPTIONS)}"


def _cli_examples() -> list[tuple[str, list[str], int]]:
    """(line, arguments after `python -m app`, expected exit code) of the CLI section."""
    [block, *_] = _bash_blocks(_section("## Judging from the command line"))
    examples = []
    for line in _command_lines(block):
        args = _app_args(line)
        if args is not None:
            expected = EXITS.search(line)
            examples.append((line.strip(), args, int(expected.group(1)) if expected else 0))
    return examples


def _rows(path: Path) -> int:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".json":
        return len(json.loads(text))
    return len([line for line in text.splitlines() if line.strip()])


def test_the_command_line_examples_run(
    tiny_gguf_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each line runs in order in a fresh folder, repository files read where they are,
    with the tiny model and one thread where the command takes a model."""
    examples = _cli_examples()
    commands = {args[0] for _, args, _ in examples}
    assert commands >= {"judge", "scenarios", "criteria", "models", "ask"}
    monkeypatch.chdir(tmp_path)
    for line, args, expected in examples:
        args = [str(ROOT / a) if "/" in a and (ROOT / a).exists() else a for a in args]
        options = _options(SUBCOMMANDS[args[0]])
        extra = ["--model", str(tiny_gguf_model)] if "--model" in options else []
        extra += ["--threads", "1"] if "--threads" in options else []
        extra += ["--quiet"] if "--quiet" in options else []
        assert cli.main([*args, *extra]) == expected, line
        if args[0] == "judge":
            source, out = Path(args[1]), Path(args[args.index("--out") + 1])
            assert _rows(out) == _rows(source), f"{line}: one output row per input row"
