"""Tiny random masked language models for the tests, built from configs and saved with
``save_pretrained``, each with a tokenizer trained on the test's own text with the
``tokenizers`` library: WordPiece for BERT, byte-level BPE for RoBERTa, Unigram
(SentencePiece's model) for ALBERT.  Nothing is downloaded.  And the float64
brute-force pseudo-log-likelihood every test compares with."""

from __future__ import annotations

import pathlib
from typing import Any

#: Training text of the tokenizers (and the texts the tests score are drawn from it).
CORPUS = (
    "The quick brown fox jumps over the lazy dog. Unbelievably, the dogs were sleeping "
    "peacefully under the old oak tree while the children played tag nearby.\n"
    "Researchers measured reading times for sentences with surprising continuations; "
    "the predictability of each word shaped how long readers lingered on it.\n"
    "A masked language model reads both sides of every token, so its pseudo-log-"
    "likelihood is not a probability of the text.  Tokenization splits rare words "
    "into several pieces: antidisestablishmentarianism, photosynthesis, internationally.\n"
)

FAMILIES = ("bert", "roberta", "albert")


def _bert_tokenizer(texts: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers.trainers import WordPieceTrainer
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, WordPieceTrainer(vocab_size=160, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")),
                        ("[SEP]", tok.token_to_id("[SEP]"))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def _roberta_tokenizer(texts: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, BpeTrainer(
        vocab_size=400, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0),
                                                      trim_offsets=True,
                                                      add_prefix_space=False)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>", cls_token="<s>",
                                   sep_token="</s>", mask_token="<mask>")


def _unigram_tokenizer(texts: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from tokenizers.trainers import UnigramTrainer
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(texts, UnigramTrainer(vocab_size=150, special_tokens=specials,
                                                  unk_token="<unk>"))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")),
                        ("[SEP]", tok.token_to_id("[SEP]"))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def build_masked(family: str, where: pathlib.Path, *, positions: int = 64,
                 seed: int = 0) -> pathlib.Path:
    """A tiny random masked LM of ``family`` and its tokenizer, saved in ``where``."""
    import torch
    import transformers as tr

    texts = CORPUS.splitlines()
    if family == "bert":
        tok = _bert_tokenizer(texts)
        config = tr.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=2, intermediate_size=64,
                               max_position_embeddings=positions,
                               pad_token_id=tok.pad_token_id)
        cls = tr.BertForMaskedLM
    elif family == "roberta":
        tok = _roberta_tokenizer(texts)
        config = tr.RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=64,
                                  max_position_embeddings=positions + 2, pad_token_id=1,
                                  bos_token_id=0, eos_token_id=2)
        cls = tr.RobertaForMaskedLM
    elif family == "albert":
        tok = _unigram_tokenizer(texts)
        config = tr.AlbertConfig(vocab_size=len(tok), embedding_size=16, hidden_size=32,
                                 num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, max_position_embeddings=positions,
                                 pad_token_id=tok.pad_token_id)
        cls = tr.AlbertForMaskedLM
    else:
        raise ValueError(family)
    torch.manual_seed(seed)
    model = cls(config).eval()
    with torch.no_grad():  # sharper distributions than the init's near-uniform ones
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)
    where.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(where)
    tok.save_pretrained(where)
    return where


def brute_pll(model: Any, tokenizer: Any, text: str, metric: str,
              windows: list[tuple[int, int, int, int]] | None = None,
              stats: bool = False) -> Any:
    """Pseudo-surprisal (nats) of every text token by the definition, in float64: one
    masked copy per token through the model alone, no batching.  ``windows``: (input
    start, input end, target start, target end) in text tokens, each read between the
    special tokens (default: the whole text in one).  ``stats``: also the entropy and
    rank of each masked position's distribution (three lists)."""
    import copy

    import torch

    ref = copy.deepcopy(model).double().eval()
    enc = tokenizer(text, add_special_tokens=False, split_special_tokens=True)
    ids, words = list(enc["input_ids"]), enc.word_ids()
    cls = [tokenizer.cls_token_id]
    sep = [tokenizer.sep_token_id]
    windows = windows or [(0, len(ids), 0, len(ids))]
    surprisal, entropy, rank = [], [], []
    for a, b, t0, t1 in windows:
        for t in range(t0, t1):
            row = cls + ids[a:b] + sep
            masked = [t]
            if metric == "within_word_l2r":
                j = t + 1
                while j < b and words[j] is not None and words[j] == words[t]:
                    masked.append(j)
                    j += 1
            for m in masked:
                row[1 + m - a] = tokenizer.mask_token_id
            with torch.no_grad():
                logits = ref(input_ids=torch.tensor([row])).logits[0, 1 + t - a]
            logp = torch.log_softmax(logits, -1)
            surprisal.append(-float(logp[ids[t]]))
            entropy.append(-float((logp.exp() * logp).sum()))
            rank.append(int((logp > logp[ids[t]]).sum()) + 1)
    return (surprisal, entropy, rank) if stats else surprisal
