"""Every course notebook in examples/ runs top to bottom (nbclient, kernel python3) with
no error, offline, in a scratch directory (files it writes stay out of the repository),
and what it shows works offline: no error output, no traceback on stderr, nothing that
loads from the network (tests/notebook_outputs.py), whatever drew it."""

from __future__ import annotations

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient
from notebook_outputs import offline_problems

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
#: Seconds one cell may take (the default model on a loaded 2-core CPU).
CELL_TIMEOUT_S = 600


def test_the_course_notebooks_are_all_here():
    names = {p.stem for p in NOTEBOOKS}
    assert {"quickstart", "sliding_windows", "comparing_tokenizers", "unigram_normalized",
            "from_bits_to_perplexity", "reading_times", "minimal_pairs",
            "context_and_chat", "where_quantization_hurts",
            "three_perplexities", "reading_times_meco", "reading_times_link",
            "what_makes_a_word_predictable"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_without_error(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    # reads like course material: prose first, a question to try at the end
    assert nb.cells[0].cell_type == "markdown" and nb.cells[-1].cell_type == "markdown"
    assert "Try this" in nb.cells[-1].source
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    problems = offline_problems(nb)
    assert not problems, "\n".join(problems)
