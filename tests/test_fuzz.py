"""Issue 15, fuzz (hypothesis): the structured memory-write JSON, the memory tools' arguments,
config files, ``EVA_`` variables and imported items each get a correct result or a clear error,
never a traceback, and nothing is half written (tests/fuzzkit.py; ``bench.faults`` runs more
inputs). Each target must also reach results, not only errors (it is not vacuous)."""

from __future__ import annotations

import logging

import pytest

from tests import fuzzkit

EXAMPLES = 120
REACHES = {
    "memory_step": "memory_step: ops ok",
    "tool_arguments": "tool_arguments: ok",
    "config_files": "config_files: valid",
    "env_variables": "env_variables: valid",
    "imported_items": "imported_items: imported",
    "import_files": "import_files: imported",
}


@pytest.mark.parametrize("target", list(fuzzkit.TARGETS))
def test_fuzz(target, caplog):
    caplog.set_level(logging.CRITICAL)
    before = fuzzkit.INPUTS[target], fuzzkit.OUTCOMES[REACHES[target]]
    fuzzkit.TARGETS[target](EXAMPLES)
    assert fuzzkit.INPUTS[target] - before[0] >= EXAMPLES
    assert fuzzkit.OUTCOMES[REACHES[target]] > before[1], "no input got a result"
