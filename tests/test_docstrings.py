"""Every public name documents itself, and its examples run.

Public names are the package's `albert_tf.__all__`, the drivers' library entry points and the
public functions and classes of each `albert_tf/tasks/<task>/task.py` and `serving.py`. Each one
has a Google-style docstring: a summary line, `Args:` naming every parameter, `Returns:` when it
returns a value, `Raises:` when its own body raises, and (for `albert_tf.__all__`) an example.
Every `>>>` example in the package runs here with doctest, from the repository root, so an
example may read the fixtures the repository ships (tests/data/fixtures/...).
"""

import ast
import doctest
import importlib
import inspect
import pathlib
import re
import textwrap

import pytest

import albert_tf

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "albert_tf"

# The drivers' library entry points: what run_*.py and create_pretraining_data.py call.
ENTRY_POINTS = [
    ("albert_tf.engine.finetuning", "run_finetuning"),
    ("albert_tf.engine.training", "train"),
    ("albert_tf.pretraining.pretrain", "pretrain"),
    ("albert_tf.pretraining.demo", "run_demo"),
    ("albert_tf.deploy.exports", "ExportOptions"),
    ("albert_tf.deploy.exports", "exporter"),
    ("albert_tf.deploy.exports", "export_model"),
]
TASK_MODULE_NAMES = ("task.py", "serving.py")


def _task_names():
    for path in sorted((PACKAGE / "tasks").glob("*/*.py")):
        if path.name not in TASK_MODULE_NAMES:
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = None
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                exported = {e.value for e in node.value.elts}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                if exported is None or node.name in exported:
                    yield module, node.name


PUBLIC = sorted(("albert_tf", name) for name in albert_tf.__all__)
# a task name that albert_tf.__all__ also exports is checked once, as the public name
DOCUMENTED = (
    PUBLIC
    + ENTRY_POINTS
    + sorted((m, n) for m, n in set(_task_names()) if n not in albert_tf.__all__)
)


def _resolve(module, name):
    if module == "albert_tf":
        return getattr(albert_tf, name)
    return getattr(importlib.import_module(module), name)


def _section(doc, title):
    """The text of a Google-style section (`Args:`, ...) of a docstring, or None."""
    match = re.search(rf"^{title}:\s*$(.*?)(?=^\S|\Z)", doc, re.M | re.S)
    return None if match is None else match.group(1)


def _parameters(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return []
    skip = {"self", "cls"}
    return [
        p.name
        for p in signature.parameters.values()
        if p.name not in skip
        and p.kind not in (p.VAR_POSITIONAL,)
        and not (p.kind == p.VAR_KEYWORD and p.name == "kwargs")
    ]


def _function_node(obj):
    """The ast of a function's own source (None for classes and builtins)."""
    if inspect.isclass(obj) or not inspect.isfunction(obj):
        return None
    try:
        source = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        return None
    return ast.parse(source).body[0]


def _own_nodes(fn):
    """Nodes of a function body, not descending into nested functions or classes."""
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
            ):
                stack.append(child)


def docstring_problems(obj, need_example):
    """What a public name's docstring lacks (empty when it is complete)."""
    doc = inspect.getdoc(obj) or ""
    problems = []
    if not doc.strip():
        return ["no docstring"]
    params = _parameters(obj)
    args = _section(doc, "Args")
    if params and args is None:
        problems.append("no Args: section")
    elif params:
        missing = [p for p in params if not re.search(rf"^\s+\**{p}\b", args, re.M)]
        if missing:
            problems.append(f"Args: lacks {missing}")
    fn = _function_node(obj)
    if fn is not None:
        nodes = list(_own_nodes(fn))
        returns = any(isinstance(n, ast.Return) and n.value is not None for n in nodes)
        yields = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes)
        if returns and _section(doc, "Returns") is None and _section(doc, "Yields") is None:
            problems.append("no Returns: section")
        if yields and _section(doc, "Yields") is None and _section(doc, "Returns") is None:
            problems.append("no Yields: section")
        if any(isinstance(n, ast.Raise) and n.exc is not None for n in nodes) and (
            _section(doc, "Raises") is None
        ):
            problems.append("no Raises: section")
    if need_example and ">>>" not in doc:
        problems.append("no example")
    return problems


@pytest.mark.parametrize("module,name", DOCUMENTED, ids=[f"{m}.{n}" for m, n in DOCUMENTED])
def test_public_names_have_google_style_docstrings(module, name):
    obj = _resolve(module, name)
    assert docstring_problems(obj, need_example=(module, name) in PUBLIC) == []


def _modules_with_examples():
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>>" in path.read_text(encoding="utf-8"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join(parts)


@pytest.mark.parametrize("module", list(_modules_with_examples()))
def test_docstring_examples_run(module, monkeypatch):
    """The examples of one module, run by doctest from the repository root."""
    monkeypatch.chdir(ROOT)
    mod = importlib.import_module(module)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    tests = [t for t in finder.find(mod, module) if t.examples]
    assert tests, f"{module} has '>>>' but doctest found no example"
    failures = []
    for test in tests:
        result = runner.run(test, out=failures.append)
        if result.failed:
            failures.append(f"-- {test.name}: {result.failed} of {result.attempted} failed")
    assert not any(f.startswith("-- ") for f in failures), "".join(failures)[-6000:]


def test_examples_use_only_what_the_repository_ships():
    """An example may read tests/data (shipped), never ../shared or the network."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip().startswith((">>>", "...")) and re.search(
                r"\.\./shared|https?://|/work/", line
            ):
                bad.append(f"{path.relative_to(ROOT)}:{n}")
    assert bad == []
