"""How fast ``score()`` scores a masked LM by pseudo-log-likelihood, against minicons'
``MaskedLMScorer`` (0.3.39) on the same text and the same model, measured side by side
in one run, with the ratio printed (target: >= 3x minicons).

The model: a BERT with random weights built from a config (``--shape base``:
bert-base-uncased's 12 x 768 and its 30,522-word vocabulary; ``small``: 4 x 512;
``tiny``: 2 x 32, for ``--smoke``), and a WordPiece tokenizer trained on
benchmarks/texts.  The text: the first ``--tokens`` tokens of those texts, one window
for both tools (minicons scores a text in one call of one masked copy per token).
Both run float32 on ``--device`` (``--dtype`` sets score()'s: its default on a GPU is
bfloat16); minicons is timed with ``rank=True`` too (score() gives each token's rank,
entropy and top-k as well).  Each time is the best of ``--repeats`` runs.

    python benchmarks/bench_masked.py [--shape small] [--tokens 128] [--device cpu]
    python benchmarks/bench_masked.py --device cuda --shape base --tokens 400
    python benchmarks/bench_masked.py --smoke   # a tiny BERT, seconds (CI)
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
SHAPES = {"tiny": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, vocab_size=2000),
          "small": dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                        intermediate_size=2048, vocab_size=30522),
          "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                       intermediate_size=3072, vocab_size=30522)}


def corpus() -> str:
    return "\n".join((HERE / "texts" / n).read_text() for n in
                     ("kld_prose.txt", "kld_story.txt", "kld_code.txt"))


def build(shape: str) -> tuple[Any, Any]:
    """A random BERT masked LM of ``shape`` and a WordPiece tokenizer trained on the
    benchmark texts (its vocabulary a part of the model's)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers.trainers import WordPieceTrainer
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(corpus().splitlines(), WordPieceTrainer(
        vocab_size=600, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")),
                                                ("[SEP]", tok.token_to_id("[SEP]"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    fast.batch_encode_plus = fast.__call__  # minicons calls it; transformers 5 removed it
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(max_position_embeddings=512, **SHAPES[shape])).eval()
    return model, fast


def text_of(tok: Any, n_tokens: int) -> str:
    """The shortest prefix of the texts, cut at a space, of at least ``n_tokens`` tokens."""
    words = corpus().split(" ")
    for i in range(1, len(words) + 1):
        text = " ".join(words[:i])
        if len(tok(text, add_special_tokens=False)["input_ids"]) >= n_tokens:
            return text
    raise SystemExit(f"the benchmark texts have fewer than {n_tokens} tokens")


def best_time(fn: Any, repeats: int, cuda: bool) -> tuple[float, Any]:
    import torch

    best, out = float("inf"), None
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        if cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a tiny BERT, 24 tokens")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="small")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", help="score()'s (minicons: float32)")
    parser.add_argument("--metric", default="within_word_l2r",
                        choices=["within_word_l2r", "original"])
    parser.add_argument("--batch-size", default="auto", help="score()'s copies per call")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    if args.smoke:
        args.shape, args.tokens, args.repeats = "tiny", 24, 1

    import numpy as np
    import torch
    from minicons.scorer import MaskedLMScorer

    from ppl_widget.scoring.kinds.models import load_model
    from ppl_widget.scoring.runner.scorer import score

    model, tok = build(args.shape)
    text = text_of(tok, args.tokens)
    n = len(tok(text, add_special_tokens=False)["input_ids"])
    cuda = args.device.startswith("cuda")
    mlm = MaskedLMScorer(model, device=args.device, tokenizer=tok)  # float32, as given
    batch = args.batch_size if args.batch_size == "auto" else int(args.batch_size)

    def theirs(rank: bool) -> Any:
        out = mlm.token_score([text], surprisal=True, rank=rank, PLL_metric=args.metric)
        return np.asarray([t[1] for t in out[0]])

    t_mc, s_mc = best_time(lambda: theirs(False), args.repeats, cuda)
    t_mc_rank, _ = best_time(lambda: theirs(True), args.repeats, cuda)
    lm = load_model((model, tok), device=args.device, dtype=args.dtype)
    t_ours, result = best_time(lambda: score(text, lm, pll_metric=args.metric,
                                             batch_size=batch), args.repeats, cuda)
    diff = float(np.abs(np.asarray(result.surprisal) - s_mc).max())
    where = torch.cuda.get_device_name() if cuda else platform.processor() or "cpu"
    print(f"masked LM: random BERT '{args.shape}' ({model.num_parameters() / 1e6:.0f}M "
          f"parameters), {n} tokens, pll_metric={args.metric}, on {args.device} ({where}, "
          f"{torch.get_num_threads()} threads); best of {args.repeats}")
    print(f"score() ({args.dtype}, batch_size={result.settings['batch_size']}): "
          f"{t_ours:.3f} s")
    print(f"minicons MaskedLMScorer (float32): {t_mc:.3f} s; with rank=True: "
          f"{t_mc_rank:.3f} s")
    print(f"ratio {t_mc / t_ours:.2f}x; with ranks {t_mc_rank / t_ours:.2f}x "
          f"(target: >= 3)")
    print(f"score() vs minicons: max |diff| {diff:.2e} nats")


if __name__ == "__main__":
    main()
