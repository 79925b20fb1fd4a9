"""An encoder-decoder model (T5, BART, Marian, ...): the target's tokens scored through
the decoder, teacher-forced, given a source the encoder reads (docs/seq2seq.md)."""
