"""The Python code an answer or a reference holds, and the function it defines.

A reference that is code settles a request by its behaviour: two functions are the same
answer when they give the same results, however they are written, and a polished function
with one wrong branch is a wrong answer however much of the reference's wording it shares.
This module finds the code (fenced blocks, else the text from its first `def`), keeps what
defines things (imports, functions, classes, assignments: not the calls an answer shows as
examples) and names the function to compare: the reference's, and the answer's of the same
name (else of the same number of parameters). Nothing here runs any code.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
DEFINING = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
MAX_PARAMETERS = 3  # the inputs tried (app/code_run/inputs.py) cover up to three


@dataclass(frozen=True)
class CodeFunction:
    """A program (definitions only) and the top-level function in it to call."""

    source: str
    name: str
    parameters: int  # positional parameters without a default


def program_of(text: str) -> ast.Module | None:
    """The definitions of the Python code in `text`, or None where it holds no function."""
    blocks = FENCE.findall(text)
    candidates = ["\n".join(blocks)] if blocks else []
    lines = text.splitlines()
    starts = ("def ", "import ", "from ")
    start = next((n for n, line in enumerate(lines) if line.startswith(starts)), None)
    if start is not None:
        candidates.append("\n".join(lines[start:]))
    for source in candidates:
        module = _parsed(source)
        if module is None:
            continue
        module.body = [node for node in module.body if isinstance(node, DEFINING)]
        if any(isinstance(node, ast.FunctionDef) for node in module.body):
            return module
    return None


def _parsed(source: str) -> ast.Module | None:
    """`source` parsed, dropping trailing lines (prose after the code) until it parses."""
    lines = source.splitlines()
    while lines:
        try:
            return ast.parse("\n".join(lines))
        except SyntaxError:
            lines.pop()
    return None


def functions(module: ast.Module) -> dict[str, int]:
    """Each top-level function's name and its count of positional parameters without a
    default (in order of definition; a later definition of a name wins)."""
    found: dict[str, int] = {}
    for node in module.body:
        if isinstance(node, ast.FunctionDef):
            positional = node.args.posonlyargs + node.args.args
            found[node.name] = len(positional) - len(node.args.defaults)
    return found


def reference_function(reference: str, question: str) -> CodeFunction | None:
    """The reference's function to compare with: the one the request names, else its last
    (helpers come first); None where the reference holds no code with a function, or the
    function takes none or more than MAX_PARAMETERS."""
    module = program_of(reference)
    if module is None:
        return None
    defined = functions(module)
    named = [name for name in defined if re.search(rf"\b{re.escape(name)}\b", question)]
    name = named[-1] if named else list(defined)[-1]
    if not 0 < defined[name] <= MAX_PARAMETERS:
        return None
    return CodeFunction(ast.unparse(module), name, defined[name])


def answer_function(answer: str, wanted: CodeFunction) -> CodeFunction | None:
    """The answer's function to compare with the reference's `wanted`: the one of the same
    name, else its last with as many parameters; None where it has none."""
    module = program_of(answer)
    if module is None:
        return None
    defined = functions(module)
    if wanted.name in defined:
        return CodeFunction(ast.unparse(module), wanted.name, defined[wanted.name])
    same_arity = [name for name, count in defined.items() if count == wanted.parameters]
    if not same_arity:
        return None
    return CodeFunction(ast.unparse(module), same_arity[-1], wanted.parameters)
