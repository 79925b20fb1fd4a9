"""Altair charts: the data they draw, their renderer, one module per family of charts."""
