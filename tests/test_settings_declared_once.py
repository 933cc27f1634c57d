"""Every user-facing setting is declared once (models/run_settings.py, models/judge_settings.py),
and everything else is made from the declaration: the CLI's flags, the core's defaults, the
UI's starting values (the sidebar's widgets: tests/app/ui/test_sidebar_declared.py).

The copy check reads the source with an AST walk. A default written again is one of:
- a class field or a parameter named for a setting, with the setting's default as its value;
- `add_argument(<a setting's flag>, default=<its default>)`;
- a keyword argument named for a setting, given the setting's default as a number.
Neutral numbers (0, 1.0) are left out: they are an "off" or an identity as often as a copy.
"""

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from app.judging.config import JudgeConfig
from app.ui.settings import ModelDefaults, Settings
from models.backends.base import SamplingParams, run_sampling
from models.judge_settings import JudgeSettings
from models.registry import ModelEntry
from models.run_settings import RUN_DEFAULTS, RUN_SETTING_NAMES, RunSettings, declared

ROOT = Path(__file__).resolve().parents[1]
DECLARATIONS = {"models/run_settings.py", "models/judge_settings.py"}
SKIPPED = ("training/runs/", "bench/runs/")  # run outputs, not source
# a name a module uses for a setting of its own (not the run's)
OWN_MEANING = {("training/lora/config.py", "swap"): "swap augmentation of the training pairs"}
NEUTRAL = (0, 1.0)

DEFAULTS = {name: field.default for name, field in RunSettings.model_fields.items()}
DEFAULTS |= {n: f.default for n, f in JudgeSettings.model_fields.items() if f.default is not None}
FLAGS = {declared(name).flag: name for name in RUN_SETTING_NAMES}


def _same(node: ast.AST | None, name: str) -> bool:
    """`node` is a constant equal to the default of setting `name` (and of its type)."""
    if not isinstance(node, ast.Constant) or name not in DEFAULTS:
        return False
    value, default = node.value, DEFAULTS[name]
    if type(value) is not type(default) or value != default:
        return False
    return isinstance(value, bool) or value not in NEUTRAL


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, ast.AST]]:
    positional = [*node.args.posonlyargs, *node.args.args]
    pairs = list(zip([a.arg for a in positional[len(positional) - len(node.args.defaults) :]],
                     node.args.defaults, strict=True))  # fmt: skip
    pairs += [(a.arg, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)]
    return pairs


def copies_in(source: str) -> list[str]:
    """Each default of a declared setting written again in `source`, as `line: what`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if _same(node.value, node.target.id):
                found.append((node.lineno, f"{node.target.id} = {node.value.value!r}"))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for name, default in _parameters(node):
                if _same(default, name):
                    found.append((node.lineno, f"parameter {name}={default.value!r}"))
        elif isinstance(node, ast.Call):
            found += _call_copies(node)
    return [f"{line}: {what}" for line, what in sorted(found)]


def _call_copies(node: ast.Call) -> list[tuple[int, str]]:
    found = []
    first = node.args[0] if node.args else None
    flag = first.value if isinstance(first, ast.Constant) else None
    if isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument" and flag in FLAGS:
        for keyword in node.keywords:
            if keyword.arg == "default" and _same(keyword.value, FLAGS[flag]):
                found.append((node.lineno, f"{flag} default={keyword.value.value!r}"))
    for keyword in node.keywords:
        value = keyword.value
        number = isinstance(value, ast.Constant) and type(value.value) in (int, float)
        if keyword.arg and number and _same(value, keyword.arg):
            found.append((node.lineno, f"{keyword.arg}={value.value!r}"))
    return found


def _sources() -> list[Path]:
    paths = [
        p
        for folder in ("app", "models", "training", "bench")
        for p in (ROOT / folder).rglob("*.py")
    ]
    return [p for p in sorted(paths) if not str(p.relative_to(ROOT)).startswith(SKIPPED)]


def test_no_declared_default_is_written_anywhere_else():
    copies = []
    for path in _sources():
        relative = str(path.relative_to(ROOT))
        if relative in DECLARATIONS:
            continue
        for copy in copies_in(path.read_text(encoding="utf-8")):
            name = copy.split(": ", 1)[1].replace("parameter ", "").split(" ")[0].split("=")[0]
            if (relative, name) not in OWN_MEANING:
                copies.append(f"{relative}:{copy}")
    assert not copies, "defaults written outside their declaration:\n" + "\n".join(copies)


@pytest.mark.parametrize(
    "source",
    [
        "x = SamplingParams(max_tokens=400, repeat_penalty=1.1)",
        "class S:\n    cascade_below: float = 0.6\n",
        "def f(uncertain_below=0.5):\n    pass\n",
        "p.add_argument('--n-ctx', type=int, default=4096)",
        "class S:\n    use_reference: bool = True\n",
        "def f(*, template='pocketjudge'):\n    pass\n",
    ],
)
def test_the_check_finds_a_default_written_again(source):
    assert copies_in(source)


def test_a_choice_or_a_neutral_value_is_not_a_copy():
    assert not copies_in("replace(config, mode='score', swap=True, seed=0, temperature=0.0)")
    assert not copies_in("p.add_argument('--threads', type=int, default=1)")


def test_the_command_line_flags_are_made_from_the_declaration():
    from app.cli import _parser

    judge = _parser()._subparsers._group_actions[0].choices["judge"]
    actions = {action.dest: action for action in judge._actions}
    for name in RUN_SETTING_NAMES:
        setting, action = declared(name), actions[name]
        assert action.option_strings == [setting.flag], name
        if setting.kind is bool:
            assert action.default is setting.default and action.const is (not setting.default)
        else:
            assert action.default == (None if setting.layered else setting.default), name
            assert action.choices == setting.choices or setting.choices is None
    parsed = judge.parse_args(["in.jsonl", "--out", "o.jsonl"])
    assert {name: getattr(parsed, name) for name in RUN_SETTING_NAMES} == {
        name: None if declared(name).layered else DEFAULTS[name] for name in RUN_SETTING_NAMES
    }


def test_the_evaluation_takes_the_same_flags():
    from training.evaluation.evaluate import _parser

    parsed = _parser().parse_args(["file.jsonl"])
    assert (parsed.mode, parsed.n_ctx, parsed.n_threads) == (
        RUN_DEFAULTS.mode,
        RUN_DEFAULTS.n_ctx,
        RUN_DEFAULTS.n_threads,
    )


def test_the_core_and_the_registry_start_from_the_declaration():
    config = JudgeConfig()
    for name in (
        "use_reference",
        "swap",
        "reference_metrics",
        "mode",
        "feedback",
        "detect_scenario",
    ):
        assert getattr(config, name) == DEFAULTS[name], name
    assert config.sampling == run_sampling()
    assert (
        config.sampling.repeat_penalty
        == RUN_DEFAULTS.repeat_penalty
        != SamplingParams().repeat_penalty
    )
    assert ModelEntry.model_fields["cascade_below"].default == RUN_DEFAULTS.cascade_below


def test_the_app_starts_where_the_declaration_says():
    settings = Settings(model="any")
    for field in fields(Settings):
        if field.name in RUN_SETTING_NAMES:
            assert getattr(settings, field.name) == declared(field.name).app_default, field.name
    assert settings.reference_metrics and not RUN_DEFAULTS.reference_metrics  # said where declared
    assert ModelDefaults().cascade_below == RUN_DEFAULTS.cascade_below
    assert ModelDefaults().n_ctx == RUN_DEFAULTS.n_ctx


def test_every_declared_setting_has_a_flag_help_and_a_known_widget():
    for name in RUN_SETTING_NAMES:
        setting = declared(name)
        assert setting.flag.startswith("--") and setting.help and setting.label, name
        assert setting.widget in ("radio", "toggle", "slider", "number", "none"), name
        if setting.widget in ("slider", "number"):
            assert None not in (setting.minimum, setting.maximum, setting.step), name
            assert setting.minimum <= setting.default <= setting.maximum, name
