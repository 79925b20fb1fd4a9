"""Talking to an OpenAI-compatible vLLM server with the standard library: the served
models, ``/tokenize``, and ``/v1/completions`` with ``prompt_logprobs`` (vLLM's extension
of the OpenAI API: every prompt token's log-probability, with the top ones beside it).

A request that fails on the way (connection refused or reset, a 429 or 5xx answer) is
tried again after a growing pause; any other answer is an error that quotes the server.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from typing import Any

from ..model_errors import ModelLoadError

#: Environment variables an API key is read from, in order (vLLM's ``--api-key``).
API_KEY_ENV = ("VLLM_API_KEY", "OPENAI_API_KEY")
#: HTTP answers worth another try: the server is busy or restarting behind a balancer.
RETRY_STATUS = (408, 429, 500, 502, 503, 504)
#: vLLM's answer to more prompt log-probabilities than ``--max-logprobs`` allows.
_MAX_ALLOWED = re.compile(r"greater than max allowed:?\s*(-?\d+)", re.IGNORECASE)

#: One prompt position's log-probabilities: token id -> (logprob, rank); None for the
#: first position, which has no prediction.
PositionLogprobs = dict[int, tuple[float, int]] | None


class VllmError(RuntimeError):
    """The server answered with an error, or gave no answer after every try."""


class LogprobLimitError(VllmError, ValueError):
    """More top tokens were asked for than the server's ``--max-logprobs`` gives."""

    def __init__(self, asked: int, limit: int | None):
        self.asked, self.limit = asked, limit
        shown = f"at most {limit}" if limit is not None else "fewer"
        super().__init__(
            f"top_k={asked} needs {asked} log-probabilities per prompt token; this server "
            f"gives {shown} (its --max-logprobs): pass top_k<={limit if limit is not None else ''}"
            f" or restart the server with --max-logprobs {asked}")


def api_key() -> str | None:
    """The API key from the environment (``API_KEY_ENV``), if any."""
    for name in API_KEY_ENV:
        if os.environ.get(name):
            return os.environ[name]
    return None


def base_url(url: str) -> str:
    """``http://host:port/v1`` from what a user may give (with or without ``/v1``)."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


class ServerTransport:
    """Requests to one vLLM server (``url``: ``http://HOST:PORT/v1``), each tried up to
    ``retries + 1`` times, pausing ``backoff_s``, twice that, ... in between."""

    def __init__(self, url: str, *, key: str | None = None, timeout_s: float = 600.0,
                 retries: int = 4, backoff_s: float = 0.5):
        self.url = base_url(url)
        self.root = self.url[:-len("/v1")]  # /tokenize lives beside /v1
        self.key = key if key is not None else api_key()
        self.timeout_s, self.retries, self.backoff_s = timeout_s, retries, backoff_s

    # ---- one request -----------------------------------------------------
    def _request(self, url: str, body: dict | None = None) -> Any:
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        data = None if body is None else json.dumps(body).encode()
        pause = self.backoff_s
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(url, data=data, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                message = _server_message(exc)
                if exc.code not in RETRY_STATUS or attempt == self.retries:
                    raise VllmError(f"the vLLM server at {self.url} answered {exc.code} to "
                                    f"{url.rsplit('/', 1)[-1]}: {message}") from None
                why = f"{exc.code} {message}"
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                why = str(getattr(exc, "reason", exc))
                if attempt == self.retries:
                    raise VllmError(
                        f"the vLLM server at {self.url} gave no answer after "
                        f"{self.retries + 1} tries ({why}); is it running? Start it with "
                        "python -m vllm.entrypoints.openai.api_server --model ... "
                        "(docs/vllm.md)") from None
            except ValueError as exc:  # not JSON: not an OpenAI-compatible server
                raise VllmError(f"{url} answered something other than JSON ({exc}); is "
                                f"{self.url} a vLLM server?") from None
            time.sleep(pause)
            pause *= 2
        raise AssertionError(why)  # the loop returns or raises on its last try

    # ---- what the model kind uses ----------------------------------------
    def models(self) -> list[dict[str, Any]]:
        """The served models: ``id``, ``root`` (the model path or name), ``max_model_len``."""
        answer = self._request(f"{self.url}/models")
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise ModelLoadError(f"{self.url}/models did not list models (got "
                                 f"{str(answer)[:200]}); is it an OpenAI-compatible server?")
        return data

    def tokenize(self, model: str, text: str) -> list[int]:
        """The server's token ids of ``text`` (no special tokens added)."""
        answer = self._request(f"{self.root}/tokenize",
                               {"model": model, "prompt": text, "add_special_tokens": False})
        return [int(t) for t in answer["tokens"]]

    def prompt_logprobs(self, model: str, ids: list[int], k: int) -> list[PositionLogprobs]:
        """Per position of the prompt ``ids``: its token's log-probability and rank and
        the ``k`` most probable tokens' (one completion request, one token generated)."""
        body = {"model": model, "prompt": ids, "max_tokens": 1, "temperature": 0.0,
                "prompt_logprobs": k}
        try:
            answer = self._request(f"{self.url}/completions", body)
        except VllmError as exc:
            found = _MAX_ALLOWED.search(str(exc))
            if found:
                raise LogprobLimitError(k, int(found.group(1))) from exc
            raise
        try:
            positions = answer["choices"][0].get("prompt_logprobs")
        except (KeyError, IndexError, TypeError, AttributeError):
            positions = None
        if not isinstance(positions, list) or len(positions) != len(ids):
            raise VllmError(
                f"the server at {self.url} gave no prompt log-probabilities (got "
                f"{_shape(positions, len(ids))}): scoring needs vLLM's prompt_logprobs, an "
                "extension of the OpenAI API that other servers (llama.cpp's, OpenAI's) do "
                "not have, and a server started with --max-logprobs of at least top_k")
        return [parse_position(p) for p in positions]


def parse_position(entry: Any) -> PositionLogprobs:
    """One position of an answer's ``prompt_logprobs`` (JSON keys are the token ids)."""
    if entry is None:
        return None
    return {int(t): (float(v["logprob"]), int(v["rank"])) for t, v in entry.items()}


def _shape(positions: Any, expected: int) -> str:
    if positions is None:
        return "none"
    if isinstance(positions, list):
        return f"{len(positions)} positions for a prompt of {expected}"
    return type(positions).__name__


def _server_message(exc: urllib.error.HTTPError) -> str:
    """The error message of an OpenAI-style error body, else the body's start."""
    try:
        body = exc.read().decode("utf-8", "replace")
    except OSError:
        return exc.reason or ""
    try:
        parsed = json.loads(body)
        inner = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
        message = inner.get("message") if isinstance(inner, dict) else None
        return str(message or parsed)[:500]
    except ValueError:
        return body[:500]
