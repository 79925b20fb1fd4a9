"""A small stand-in for a vLLM server on 127.0.0.1, for the unit tests of the vLLM model
kind: ``/v1/models``, ``/tokenize`` and ``/v1/completions`` with ``prompt_logprobs``,
answered from a tiny local model exactly as vLLM lays its answers out (the first position
None; per position the prompt token's and the top k's logprob and rank), with switches
for the faults a real server shows."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeVllm:
    """``FakeVllm(lm, root)``: serves ``lm`` (a LoadedModel) as ``name``; ``root`` is the
    folder its tokenizer is saved in (what vLLM reports as the model's root)."""

    def __init__(self, lm: Any, root: str, *, name: str = "tiny", max_model_len: int = 64,
                 max_logprobs: int = 20, tokenizer: Any = None):
        self.lm, self.root, self.name = lm, root, name
        self.max_model_len, self.max_logprobs = max_model_len, max_logprobs
        self.tokenizer = tokenizer or lm.tokenizer
        self.fail_next = 0  # answer 503 to this many completion requests
        self.fail_after: int | None = None  # answer 503 once this many were answered
        self.no_logprobs = False  # answer like a server without prompt_logprobs
        self.completions = 0  # completion requests answered with log-probabilities
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ---- answers -----------------------------------------------------------
    def answer(self, path: str, body: dict | None) -> tuple[int, dict]:
        if path == "/v1/models":
            return 200, {"object": "list", "data": [
                {"id": self.name, "object": "model", "root": self.root,
                 "max_model_len": self.max_model_len}]}
        if path == "/tokenize":
            ids = self.tokenizer(body["prompt"], add_special_tokens=False)["input_ids"]
            return 200, {"tokens": list(ids), "count": len(ids)}
        if path == "/v1/completions":
            return self.complete(body)
        return 404, {"error": {"message": f"no route {path}"}}

    def complete(self, body: dict) -> tuple[int, dict]:
        with self.lock:
            self.bodies.append(body)
            if self.fail_next or (self.fail_after is not None
                                  and self.completions >= self.fail_after):
                self.fail_next = max(0, self.fail_next - 1)
                return 503, {"error": {"message": "busy"}}
        if body.get("model") != self.name:
            return 404, {"error": {"message": f"The model `{body.get('model')}` does not "
                                              "exist."}}
        ids, k = body["prompt"], body.get("prompt_logprobs")
        if len(ids) + body.get("max_tokens", 16) > self.max_model_len:
            return 400, {"error": {"message": f"This model's maximum context length is "
                                              f"{self.max_model_len} tokens."}}
        if k is not None and k > self.max_logprobs:
            return 400, {"error": {"message": f"Requested prompt logprobs of {k}, which is "
                                              f"greater than max allowed: {self.max_logprobs}"}}
        choice: dict[str, Any] = {"index": 0, "text": "x", "finish_reason": "length"}
        if not self.no_logprobs:
            choice["prompt_logprobs"] = self.positions(ids, k or 0)
        with self.lock:
            self.completions += 1
        return 200, {"object": "text_completion", "model": self.name, "choices": [choice]}

    def positions(self, ids: list[int], k: int) -> list:
        import torch

        with torch.inference_mode():
            logits = self.lm.model(torch.tensor([ids])).logits[0].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        out: list = [None]
        for i in range(1, len(ids)):
            row = logprobs[i - 1]
            entry = {}
            top = torch.topk(row, k).indices.tolist() if k else []
            for rank, t in enumerate(top, start=1):
                entry[str(t)] = {"logprob": float(row[t]), "rank": rank, "decoded_token": "?"}
            t = ids[i]
            if str(t) not in entry:
                rank = int((row > row[t]).sum()) + 1
                entry[str(t)] = {"logprob": float(row[t]), "rank": rank, "decoded_token": "?"}
            out.append(entry)
        return out


def _handler(fake: FakeVllm) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _reply(self, body: dict | None) -> None:
            fake.headers.append(dict(self.headers))
            status, answer = fake.answer(self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            self._reply(None)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            self._reply(json.loads(self.rfile.read(length)))

    return Handler
