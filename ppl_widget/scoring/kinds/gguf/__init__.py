"""A GGUF file (the embedded default model among them): checked, dequantized once; its
tokenizer as llama.cpp builds it; a GGUF-quantized copy of a loaded model.
"""
