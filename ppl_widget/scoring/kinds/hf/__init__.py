"""A Hugging Face transformers model: the matrix products its precision uses on a CPU."""
