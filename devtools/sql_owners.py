"""An import-linter contract: only the modules that own tables run SQL.

The ``protected`` contract on ``core.store.storage`` keeps other modules from *opening* the store, but a
connection is handed around (``with storage.transaction() as conn``), and a module that receives
one can run any statement on any table. This contract reads the source of every module of the
listed packages and reports each call of ``execute``/``executemany``/``executescript`` (on any
object) outside the owners, so a table keeps one module that knows its columns. An owner is a
module or a package (all of its modules). Importing ``sqlite3`` for its types and errors is no
SQL and is allowed.

    [[tool.importlinter.contracts]]
    name = "only table owners run SQL"
    type = "sql_owners"
    containers = ["core", "models"]
    owners = ["core.store", "core.chat.transcript", ...]
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

SQL_CALLS = frozenset({"execute", "executemany", "executescript"})


@dataclass(frozen=True)
class Breach:
    module: str
    line: int
    what: str


def _source(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def breaches_in(module: str, source: str) -> list[Breach]:
    """Every SQL call in one module's source."""
    found: list[Breach] = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_CALLS
        ):
            found.append(Breach(module, node.lineno, f".{node.func.attr}()"))
    return sorted(found, key=lambda b: b.line)


def owned(module: str, owners: set[str]) -> bool:
    """``module`` is an owner, or inside an owner package."""
    return any(module == o or module.startswith(o + ".") for o in owners)


class SqlOwnersContract(Contract):
    containers = fields.ListField(subfield=fields.StringField())
    owners = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        owners = set(self.owners)
        unknown = sorted(o for o in owners if o not in graph.modules)
        breaches: list[Breach] = []
        for container in self.containers:
            for module in sorted({container} | graph.find_descendants(container)):
                if owned(module, owners):
                    continue
                path = _source(module)
                if path is not None:
                    breaches.extend(breaches_in(module, path.read_text(encoding="utf-8")))
        return ContractCheck(
            kept=not breaches and not unknown, metadata={"breaches": breaches, "unknown": unknown}
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        for owner in check.metadata["unknown"]:
            output.print_error(f"{owner} is listed as a table owner but is no module")
        for b in check.metadata["breaches"]:
            output.print_error(
                f"{b.module}:{b.line} runs SQL ({b.what}) but owns no table", bold=False
            )
        output.new_line()
