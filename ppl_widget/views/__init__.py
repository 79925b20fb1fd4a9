"""The views: Jupyter widgets (widget*, compare_*, live_run), their wire format (protocol),
Altair charts (``charts/``), self-contained pages (export, assets, headless, offline_notebook).

Built on ``ppl_widget.scoring`` and ``ppl_widget.core``; nothing below imports them.
"""
