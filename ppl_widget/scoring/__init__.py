"""The scoring side (torch), by room: ``runner/`` (the run loop: prepare, forward, run, the
scorer's entry points, packed passes, incremental re-scoring), ``kinds/`` (loading a model,
the ``ScoringModel`` protocol, and one subpackage per model kind: ``hf``, ``gguf``,
``ngram``, ``vllm``, ``onnx``), ``analyses/`` (what is built on the scorer: compare,
divergence, pairs, words, predictive power) and ``corpus/`` (whole corpora).

Builds on ``ppl_widget.core``; never imports the views.
"""
