"""The single-model view's synced state: the traits its front end reads and writes.

Declared once, below both of their users: ``PerplexityWidget`` (widget.py) adds the
kernel side (scoring, controls), and a page with no kernel (export.py) starts from
these defaults.  Mirrored by the ``TRAIT_*`` names of ``js/src/protocol.js``.
"""

from __future__ import annotations

import anywidget
import traitlets

from .widget_settings import Context, Count, Prefix


class PerplexityTraits(anywidget.AnyWidget):
    """The synced traits of ``PerplexityWidget`` (not a widget on its own)."""

    text = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("idle").tag(sync=True)  # idle|loading|scoring|done|cancelled|error
    error = traitlets.Unicode("").tag(sync=True)
    settings = traitlets.Dict().tag(sync=True)
    # checked by score()'s rules on every assignment (widget_settings.py)
    max_length = Count().tag(sync=True)
    stride = Count().tag(sync=True)
    prefix = Prefix().tag(sync=True)  # "bos" or "none"
    # every window reads the prefix token first (score()'s prefix_every_window)
    prefix_every_window = traitlets.Bool(False).tag(sync=True)
    # read before the text, never scored: a string or a chat (shown before the text)
    context = Context().tag(sync=True)
    result_data = traitlets.Dict(None, allow_none=True).tag(sync=True)
    color_mode = traitlets.Unicode("surprisal").tag(sync=True)
    show_boundaries = traitlets.Bool(False).tag(sync=True)
    level = traitlets.Enum(("token", "word", "sentence"), "token").tag(sync=True)
    surprisal_unit = traitlets.Enum(("bits", "nats"), "bits").tag(sync=True)
    bow_correction = traitlets.Bool(False).tag(sync=True)  # word tooltips: corrected value
    editable = traitlets.Bool(False).tag(sync=True)  # a text box that re-scores as you type
    # the explanation shown ("why is this token surprising?", protocol.explanation_data)
    explanation = traitlets.Dict(default_value=None, allow_none=True).tag(sync=True)
