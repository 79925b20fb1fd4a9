"""``ppl_widget.datasets``: reading-time data a user can get (``load_meco``, ``load_xlang``,
``meco_published``, ``languages``), read from a local copy or downloaded once, checked,
into the package cache. The code lives in ``scoring/datasets/``; this module is its
public name (``from ppl_widget.datasets import languages``)."""

from __future__ import annotations

from .scoring.datasets import (
    ENV,
    ReadingDataError,
    data_file,
    languages,
    load_meco,
    load_xlang,
    meco_published,
)

__all__ = ["ENV", "ReadingDataError", "data_file", "languages", "load_meco", "load_xlang",
           "meco_published"]
