"""A model served by vLLM: the client, an in-process engine, a launcher."""
