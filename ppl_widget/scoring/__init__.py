"""The scoring side: loading models and scoring texts with them (torch).

Builds on ``ppl_widget.core``; never imports the views.
"""
