"""Scoring a whole corpus into one resumable Parquet file: the documents (input), windows
of several documents per model call (batch), host work beside the GPU (pipeline), the
part store (store), torchrun ranks (distributed), the run itself (run) and its progress."""

from .run import KILL_AFTER_PARTS_ENV, MANIFEST, parts_dir, score_corpus

__all__ = ["KILL_AFTER_PARTS_ENV", "MANIFEST", "parts_dir", "score_corpus"]
