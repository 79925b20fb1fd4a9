"""Scoring a whole corpus into one resumable Parquet file: the documents (input), windows
of several documents per model call (batch), host work beside the GPU (pipeline), the
part store (store), torchrun ranks (distributed), the run itself (run) and its progress."""

from .run import CorpusRun, score_corpus
from .store import KILL_AFTER_PARTS_ENV, MANIFEST, PartStore, parts_dir

__all__ = ["KILL_AFTER_PARTS_ENV", "MANIFEST", "CorpusRun", "PartStore", "parts_dir",
           "score_corpus"]
