"""A masked language model (BERT, RoBERTa, ...) scored by pseudo-log-likelihood."""
