"""The language codes of the MECO corpus and its merged files (Wilcox et al. 2023's
repositories), named: charts and tables show "Estonian", not "ee". MECO's own codes are
not ISO 639-1 ("du" is Dutch, "ge" German, "sp" Spanish, "ee" Estonian, "gr" Greek)."""

from __future__ import annotations

LANGUAGE_NAMES = {
    "du": "Dutch", "ee": "Estonian", "en": "English", "fi": "Finnish", "ge": "German",
    "gr": "Greek", "he": "Hebrew", "it": "Italian", "ko": "Korean", "no": "Norwegian",
    "ru": "Russian", "sp": "Spanish", "tr": "Turkish",
}


def language_name(code: object) -> str:
    """The language a MECO code names (``"ee"`` -> ``"Estonian"``); any other value as
    given, so a table that already holds names keeps them."""
    return LANGUAGE_NAMES.get(str(code), str(code))
