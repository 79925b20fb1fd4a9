"""IPython extension: ``%load_ext ppl_widget`` registers three magics.

``%%surprisal [options]``      scores the cell body in the widget (the cell's output);
``%surprisal EXPR_OR_PATH``    scores a string variable or expression, or a text file;
``%ppl_config [options]``      the kernel's defaults for later magics (no options: show).

``--model`` takes the name of a variable holding a model (a ``LoadedModel`` from
``load_model``, an ``NGramModel``, a ``(model, tokenizer)`` pair) or anything
``load_model`` takes (a Hub id, a directory, a ``.gguf`` path); ``default`` is the
embedded default model.  Models named by a string are loaded once per kernel.

Loading this module imports neither torch nor transformers: they load when a magic
first scores something.  Bad options are one-line ``UsageError``s shown in the cell.
"""

from __future__ import annotations

import os
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .core.protocols import PROTOCOLS
from .core.validation import check_text, check_top_k
from .core.windows import check_window_settings

#: Settings of %ppl_config, with their defaults.
DEFAULTS: dict[str, Any] = {"model": "default", "device": "auto", "dtype": "auto",
                            "max_length": None, "stride": None, "prefix": "bos",
                            "add_eos": False, "top_k": 5}


def _scoring_options(func: Any) -> Any:
    """The options %%surprisal and %surprisal share (applied bottom-up)."""
    for deco in reversed([
        argument("--model", "-m", default=None,
                 help="a variable holding a model (load_model's result, an NGramModel, a "
                      "(model, tokenizer) pair) or anything load_model takes; 'default' "
                      "is the embedded model"),
        argument("--max-length", type=int, default=None, help="window length in tokens"),
        argument("--stride", type=int, default=None, help="new targets per later window"),
        argument("--no-prefix", action="store_true",
                 help="leave the first token unscored (default: scored after BOS)"),
        argument("--add-eos", action="store_true", help="also score an end-of-text token"),
        argument("--top-k", type=int, default=None, help="alternatives kept per token"),
        argument("--context", default=None, metavar="CONTEXT",
                 help="what the model reads first, not scored: a variable holding a string "
                      "or a chat (list of {'role', 'content'} messages), a text file, or "
                      "the text itself (quoted)"),
        argument("--prefix-every-window", action="store_true",
                 help="every window reads the BOS token first"),
        argument("--protocol", choices=list(PROTOCOLS), default="exact",
                 help="whose window layout: exact (every token once, the default), "
                      "llama.cpp, lm-eval or hf-guide (docs/protocols.md)"),
        argument("--as", dest="as_name", default=None, metavar="NAME",
                 help="also bind the widget to NAME in the user namespace"),
    ]):
        func = deco(func)
    return func


@magics_class
class PplMagics(Magics):
    """The ppl-widget magics; ``config`` holds the kernel's defaults."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.config_values: dict[str, Any] = dict(DEFAULTS)
        self._models: dict[tuple, Any] = {}  # (spec, device, dtype) -> LoadedModel

    # ---- %ppl_config ------------------------------------------------------
    @magic_arguments()
    @argument("--model", "-m", default=None, help="default model (as in %%surprisal)")
    @argument("--device", default=None, help="auto, cpu, cuda, cuda:N or mps")
    @argument("--dtype", default=None, help="auto, float32, bfloat16 or float16")
    @argument("--max-length", type=int, default=None, help="default window length")
    @argument("--stride", type=int, default=None, help="default stride")
    @argument("--prefix", choices=["bos", "none"], default=None,
              help="score the first token after BOS ('bos') or leave it unscored ('none')")
    @argument("--add-eos", choices=["yes", "no"], default=None, help="score an EOS token")
    @argument("--top-k", type=int, default=None, help="alternatives kept per token")
    @argument("--reset", action="store_true", help="back to the defaults")
    @line_magic
    def ppl_config(self, line: str = "") -> None:
        """Set the kernel's defaults for %%surprisal and %surprisal; with no
        options, print them."""
        args = parse_argstring(self.ppl_config, line)
        if args.reset:
            self.config_values = dict(DEFAULTS)
        given = {k: v for k, v in vars(args).items() if v is not None and k != "reset"}
        if "add_eos" in given:
            given["add_eos"] = given["add_eos"] == "yes"
        merged = {**self.config_values, **given}
        _check_settings(merged["max_length"], merged["stride"], merged["top_k"])
        if "device" in given or "dtype" in given:
            _check_device_dtype(merged["device"], merged["dtype"])
        self.config_values = merged
        if not given or args.reset:
            width = max(map(len, merged))
            print("\n".join(f"{k:<{width}}  {v!r}" for k, v in merged.items()))

    # ---- %%surprisal and %surprisal ------------------------------------
    @magic_arguments(name="surprisal")
    @_scoring_options
    @cell_magic("surprisal")
    def surprisal_cell(self, line: str, cell: str) -> Any:
        """Score the cell body with a causal LM and show it coloured by surprisal."""
        args = parse_argstring(self.surprisal_cell, line)
        return self._widget(cell, args, "the cell")

    @magic_arguments(name="surprisal")
    @argument("source", nargs="+",
              help="a str variable or expression, or the path of a text file")
    @_scoring_options
    @line_magic("surprisal")
    def surprisal_line(self, line: str) -> Any:
        """Score a string (a variable or expression) or a text file in the widget."""
        args = parse_argstring(self.surprisal_line, line)
        source = " ".join(args.source)
        return self._widget(self._text_of(source), args, repr(source))

    def _text_of(self, source: str) -> str:
        path = os.path.expanduser(source)
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as f:
                    return f.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"cannot read {source!r} as UTF-8 text: {exc}") from None
        try:
            value = eval(source, self.shell.user_ns)  # noqa: S307 -- the user's own kernel
        except Exception as exc:
            raise UsageError(f"{source!r} is neither a file nor an expression that evaluates "
                             f"here ({type(exc).__name__}: {exc})") from None
        if not isinstance(value, str):
            raise UsageError(f"{source!r} is a {type(value).__name__}, not a str: pass a "
                             "string, a variable holding one, or the path of a text file")
        return value

    def _widget(self, text: str, args: Any, name: str) -> Any:
        """The widget for ``text``; ``name`` says where the text came from (errors name it)."""
        cfg = self.config_values
        add_eos = bool(args.add_eos or cfg["add_eos"])
        try:
            check_text(text, add_eos, name=name, eos_option="--add-eos", blank_ok=False)
        except ValueError as exc:  # before any model loads
            raise UsageError(str(exc)) from None
        max_length = args.max_length if args.max_length is not None else cfg["max_length"]
        stride = args.stride if args.stride is not None else cfg["stride"]
        top_k = args.top_k if args.top_k is not None else cfg["top_k"]
        _check_settings(max_length, stride, top_k)
        if args.as_name is not None and not args.as_name.isidentifier():
            raise UsageError(f"--as needs a Python name, got {args.as_name!r}")
        context = self._context_of(args.context) if args.context is not None else None
        model = self._model(args.model if args.model is not None else cfg["model"])
        from .views.widget import PerplexityWidget

        try:
            widget = PerplexityWidget(
                text, model, max_length=max_length, stride=stride,
                prefix=None if args.no_prefix or cfg["prefix"] == "none" else "bos",
                add_eos=add_eos, top_k=top_k, context=context,
                prefix_every_window=args.prefix_every_window, protocol=args.protocol)
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc)) from None
        if args.as_name:
            self.shell.user_ns[args.as_name] = widget
        return widget

    def _context_of(self, source: str) -> Any:
        """``--context``: a text file, a variable (or expression) holding a string or a
        chat, or else the text itself; an undefined name is an error, not a text."""
        path = os.path.expanduser(source)
        if os.path.isfile(path):
            return self._text_of(source)
        try:
            value = eval(source, self.shell.user_ns)  # noqa: S307 -- the user's own kernel
        except NameError as exc:
            if source.isidentifier():
                raise UsageError(f"--context {source!r}: {exc}; quote a text to read it "
                                 "as is") from None
            value = source
        except Exception:  # not an expression: the words themselves
            value = source
        if not isinstance(value, str | list | tuple):
            raise UsageError(f"--context {source!r} is a {type(value).__name__}: pass a "
                             "string, a chat (a list of messages), or a text file")
        return value

    def _model(self, spec: str) -> Any:
        """A variable's model, or a model loaded (once) from a name or path."""
        ns = self.shell.user_ns
        if spec in ns and not isinstance(ns[spec], str):
            value = ns[spec]
            if isinstance(value, tuple | list):
                return self._load(value, tuple(id(v) for v in value))
            return value
        if spec in ns:  # a variable holding a model name or path
            spec = ns[spec]
        return self._load(None if spec == "default" else spec, spec)

    def _load(self, spec: Any, key: Any) -> Any:
        cfg = self.config_values
        cache_key = (key, cfg["device"], cfg["dtype"])
        if cache_key not in self._models:
            from .scoring.kinds.load_progress import FirstLoadLine
            from .scoring.kinds.models import ModelLoadError, as_loaded, load_model

            bar = FirstLoadLine()  # a first-time preparation: one line under the cell
            try:
                if spec is None and cfg["device"] == cfg["dtype"] == "auto":
                    lm = as_loaded(None, progress=bar)  # the scorer's process-wide default
                else:
                    lm = load_model(spec, device=cfg["device"], dtype=cfg["dtype"],
                                    progress=bar)
            except (ModelLoadError, TypeError, ValueError) as exc:
                raise UsageError(f"--model {key!r}: {exc}") from None
            finally:
                bar.close()
            self._models[cache_key] = lm
        return self._models[cache_key]


def _check_settings(max_length: Any, stride: Any, top_k: Any) -> None:
    """score()'s window and top-k rules, with its messages, before any model loads."""
    try:
        check_window_settings(max_length, stride)  # None: the model's default
        check_top_k(top_k)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _check_device_dtype(device: str, dtype: str) -> None:
    dtypes = ("auto", "float32", "fp32", "bfloat16", "bf16", "float16", "fp16")
    if dtype not in dtypes:
        raise UsageError(f"--dtype must be one of {', '.join(dtypes)}, got {dtype!r}")
    kind = device.split(":")[0]
    if kind not in ("auto", "cpu", "cuda", "mps"):
        raise UsageError(f"--device must be auto, cpu, cuda, cuda:N or mps, got {device!r}")


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics (``%load_ext ppl_widget``)."""
    ipython.register_magics(PplMagics(ipython))
