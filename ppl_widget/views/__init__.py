"""The views: Jupyter widgets (live_run, widget*, compare_*), their wire format (protocol),
Altair charts (chart*) and self-contained HTML pages (export, assets, offline_notebook).

Built on ``ppl_widget.scoring`` and ``ppl_widget.core``; nothing below imports them.
"""
