"""Analyses built on the scorer: comparing models, divergence, minimal pairs, word lists,
predictive power of surprisal for reading times.
"""
