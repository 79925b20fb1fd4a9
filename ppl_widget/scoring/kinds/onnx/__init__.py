"""A transformers model exported as ONNX for the live page, and how far it is from ``score()``."""
