"""The pure core (numpy; pandas on first use): windows, text units, metrics, results, comparisons.
Nothing here imports torch, the widget or a view; the views' work is asked for in ``providers``.
"""
