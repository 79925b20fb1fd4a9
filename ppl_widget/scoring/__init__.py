"""The scoring side (torch): model kinds (models, ngram, the model_kind protocols) and
scoring with them (scorer: forward, run, vocab, prepare; compare; the corpus/ package).

Builds on ``ppl_widget.core``; never imports the views.
"""
