"""The pure core: windows, text units, metrics and results.

numpy (and pandas, for tables) only: nothing here imports torch, transformers
or the widget, so results can be planned, summarised, saved and loaded anywhere.
"""
