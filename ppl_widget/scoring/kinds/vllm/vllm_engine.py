"""An offline ``vllm.LLM`` in this process (a GPU node), asked what a server is asked:
each prompt's ``prompt_logprobs`` with one token generated, a batch of prompts per
``generate`` call (the engine batches them itself)."""

from __future__ import annotations

from typing import Any

from .vllm_client import LogprobLimitError, PositionLogprobs


class EngineTransport:
    """The requests of ``vllm_client.ServerTransport``, through ``engine.generate``."""

    def __init__(self, engine: Any):
        self.engine = engine
        config = _model_config(engine)
        self.model_path = str(getattr(config, "model", None) or type(engine).__name__)
        self.max_model_len = int(getattr(config, "max_model_len", 0) or 0)
        self.dtype = str(getattr(config, "dtype", "unknown")).replace("torch.", "")
        limit = getattr(config, "max_logprobs", None)
        self.max_logprobs = limit if isinstance(limit, int) and limit >= 0 else None

    def tokenizer(self) -> Any:
        return self.engine.get_tokenizer()

    def tokenize(self, model: str, text: str) -> list[int]:
        tok = self.engine.get_tokenizer()
        return list(tok(text, add_special_tokens=False)["input_ids"])

    def prompt_logprobs_many(self, prompts: list[list[int]],
                             k: int) -> list[list[PositionLogprobs]]:
        """Per prompt, per position: its token's (logprob, rank) and the top ``k``'s."""
        from vllm import SamplingParams

        if self.max_logprobs is not None and k > self.max_logprobs:
            raise LogprobLimitError(k, self.max_logprobs)
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=k)
        outputs = self.engine.generate([{"prompt_token_ids": p} for p in prompts], params,
                                       use_tqdm=False)
        return [[None if pos is None else
                 {int(t): (float(lp.logprob), int(lp.rank)) for t, lp in pos.items()}
                 for pos in out.prompt_logprobs] for out in outputs]


def _model_config(engine: Any) -> Any:
    """The engine's ``ModelConfig`` (where vLLM versions keep it)."""
    inner = getattr(engine, "llm_engine", None)
    config = getattr(inner, "model_config", None)
    if config is None and hasattr(inner, "get_model_config"):
        config = inner.get_model_config()
    return config
