"""The package imports only downward: programs over serving over the time budget over training
over decoding over the export format over the checkpoint format over the four stages over the
base modules (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "llm_from_scratch"

# Lowest first. A module may import modules of a lower layer and of its own unit; the four
# stages of layer 3 are separate units, so none of them imports another.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "display"),
    (
        "atomic",
        "paths",
        "device",
        "precision",
        "schema",
        "numbers",
        "word_segmentation",
        "text_input",
    ),
    ("name_dictionary",),
    ("tokenizer", "model", "data", "evaluation"),
    ("checkpoint",),
    ("export",),
    ("decoding",),
    ("training",),
    ("training.budget",),  # plans the run and paces its loop: nothing in training/ imports it
    ("serving",),
    ("programs",),
]


def unit(module: str) -> str:
    """`llm_from_scratch.data.corpus` -> `data`, `llm_from_scratch.training.budget.probe` ->
    `training.budget`; the package itself is the unit `""`."""
    parts = module.split(".")
    if parts[1:3] == ["training", "budget"]:
        return "training.budget"
    return parts[1] if len(parts) > 1 else ""


def layer(module: str) -> int:
    if unit(module) == "":
        return len(LAYERS)  # the package's __init__ is the public API, above everything
    for index, units in enumerate(LAYERS):
        if unit(module) in units:
            return index
    raise AssertionError(f"{module} is in no layer: add its unit to LAYERS")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every `llm_from_scratch` module `path` imports, lazily or under TYPE_CHECKING too."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    modules = {name for name in found if name.startswith("llm_from_scratch.")}
    # `from package import submodule` names a module; `from module import function` does not.
    return {name for name in modules if _exists(name)}


def _exists(module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file() or (PACKAGE / relative).is_dir()


def allowed(importer: str, imported: str) -> bool:
    """The rule: a module imports its own unit or a lower layer."""
    return unit(imported) == unit(importer) or layer(imported) < layer(importer)


def upward_imports(package: Path = PACKAGE) -> list[str]:
    """`importer -> imported` for every import that goes up a layer or across the stages."""
    violations = []
    for path in sorted(package.rglob("*.py")):
        importer = module_name(path)
        for imported in sorted(imports(path)):
            if not allowed(importer, imported):
                violations.append(f"{importer} -> {imported}")
    return violations


def import_cycles(package: Path = PACKAGE) -> list[list[str]]:
    """Cycles in the module import graph (a package's `__init__` counts as its own module)."""
    graph = {module_name(path): imports(path) for path in package.rglob("*.py")}
    cycles, state = [], {}

    def visit(module: str, stack: list[str]) -> None:
        state[module] = "open"
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == "open":
                cycles.append([*stack[stack.index(imported) :], imported])
            elif imported not in state:
                visit(imported, [*stack, imported])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def test_library_imports_only_downward():
    assert upward_imports() == []


def test_no_import_cycles():
    assert import_cycles() == []


def test_the_training_loop_reads_with_few_modules_open():
    """A newcomer reading `Trainer` follows at most 15 of the project's modules (issue 88)."""
    assert len(imports(PACKAGE / "training" / "trainer.py")) <= 15


def test_the_plan_is_plain_data_below_the_budget():
    """A run's plan is decided above the loop and read below it (issue 97): `plan.py` holds only
    values and imports nothing of the training stage but its config."""
    found = imports(PACKAGE / "training" / "plan.py")
    assert {unit(module) for module in found} <= {"model", "schema", "tokenizer", "training"}
    assert {m for m in found if unit(m) == "training"} == {"llm_from_scratch.training.config"}


def test_every_module_has_a_layer():
    for path in PACKAGE.rglob("*.py"):
        layer(module_name(path))  # raises for a unit missing from LAYERS


@pytest.mark.parametrize(
    ("importer", "imported", "expected"),
    [
        ("llm_from_scratch.decoding.translator", "llm_from_scratch.checkpoint", True),
        ("llm_from_scratch.checkpoint", "llm_from_scratch.training.trainer", False),
        ("llm_from_scratch.data.datamodule", "llm_from_scratch.tokenizer.bpe", False),
        ("llm_from_scratch.training.trainer", "llm_from_scratch.programs.train", False),
        ("llm_from_scratch.programs.evaluate", "llm_from_scratch.programs.translate", True),
        ("llm_from_scratch.serving.service", "llm_from_scratch.training.attention_figure", True),
        ("llm_from_scratch.training.validation", "llm_from_scratch.serving.service", False),
        ("llm_from_scratch.training.state", "llm_from_scratch.training.budget.schedule", False),
        ("llm_from_scratch.training.budget.probe", "llm_from_scratch.training.learner", True),
        ("llm_from_scratch.programs.train", "llm_from_scratch.training.budget.planner", True),
    ],
)
def test_the_rule_itself(importer, imported, expected):
    """The check flags what it should: a stage importing a peer, a program or a higher layer."""
    assert allowed(importer, imported) == expected
