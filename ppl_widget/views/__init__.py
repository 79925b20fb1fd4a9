"""The views: the Jupyter widget and its message protocol.

Built on ``ppl_widget.scoring`` and ``ppl_widget.core``; nothing below imports them.
"""
