"""The run loop: a text prepared as the model's input, the windows planned and batched
through the forward pass, the progress handed out; the packed passes for many short texts;
re-scoring after an edit.
"""
