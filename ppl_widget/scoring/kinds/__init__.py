"""The model kinds: loading a model (``load_model``), the ``ScoringModel`` protocol each kind
implements, where a model's files come from, the converted-model cache, devices; one
subpackage per kind.
"""
