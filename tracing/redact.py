"""Secret redaction for everything that leaves the process: span attributes, events, status and
exception messages, resource attributes, recorded texts.

:class:`Redactor` replaces each secret it finds with ``[REDACTED]``. It holds on raw text and on
JSON-encoded text alike, the form in which most texts ride on spans (a JSON document in a string
attribute, itself JSON-encoded again in an export file):

* A token is recognised by its own prefix (``sk-proj-``, ``AKIA``, ``ghp_`` ...), not by a
  ``\\b`` word boundary: ``\\b`` fails after an escaped newline (``\\nsk-...``: the ``n`` is a word
  character) or after a ``\\u00e9`` escape. The left boundary is "not after a letter, digit or
  underscore, *or* right after a ``\\n``/``\\r``/``\\t``/``\\b``/``\\f`` escape, *or* right after
  a ``\\uXXXX`` escape"; a preceding ``\\"`` ends in a quote, which is already a boundary. This
  holds at every level of escaping (``\\\\n`` also ends in ``\\n``).
* Nothing a replacement removes starts or ends inside an escape sequence: token bodies never
  contain a backslash, and the value of a ``key: value`` pair is consumed escape by escape (a
  backslash always together with the character after it), up to the closing quote of its own
  level of escaping. ``[REDACTED]`` itself needs no escaping, so redacting valid JSON text gives
  valid JSON text.

Speed: each token pattern starts with a literal (the boundary is a look-behind placed after it),
so the regex engine scans for it at C speed; the case-insensitive ``key: value`` patterns are
only tried where one of their key words occurs in the lower-cased text; a pattern whose trigger
words do not occur at all is skipped. A 256 KiB text takes about a millisecond.

Thread safety: a :class:`Redactor` is immutable after construction (compiled patterns in a
tuple, no caches), so one instance can be shared by every thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "DEFAULT_PATTERNS",
    "REDACTED",
    "SECRET_KEYS",
    "Redactor",
    "SecretPattern",
]

REDACTED = "[REDACTED]"


class SecretPattern(NamedTuple):
    """One kind of secret.

    ``regex``: the whole match is replaced, or only its ``secret`` group when it has one.
    ``triggers``: lower-case words of which at least one occurs (case-insensitively) in any text
    the pattern can match; when none does the pattern is skipped. Empty: always tried.
    ``anchored``: the regex is tried only where a trigger occurs (it must then start by matching
    that trigger) instead of being searched for; for patterns with no literal start.
    ``replace``: given a match, the text to put instead of the secret, or None to leave the
    match alone; default ``[REDACTED]``.
    """

    name: str
    regex: str | re.Pattern[str]
    triggers: tuple[str, ...] = ()
    anchored: bool = False
    replace: Callable[[re.Match[str]], str | None] | None = None


# --- building blocks ----------------------------------------------------------------------------


def _after(width: int, *, strict: bool = False) -> str:
    """Left boundary, checked after the ``width`` characters of a token's literal start: the
    token does not continue a word, or follows a ``\\n``-style or ``\\uXXXX`` escape. ``strict``
    for tokens whose first letter is an escape letter (``r``, ``b``, ``t``...): then a preceding
    backslash is not a boundary, since the two would be an escape sequence."""
    w = rf"[\s\S]{{{width}}}"
    word = r"[A-Za-z0-9_\\]" if strict else r"[A-Za-z0-9_]"
    return rf"(?:(?<!{word}{w})|(?<=\\[nrtbf]{w})|(?<=\\u[0-9A-Fa-f]{{4}}{w}))"


_KEY_QUOTE = r"(?:\\*[\"'])?"  # the quote closing a key: ", ', \" (JSON in JSON), \\\" ...
# An unquoted value: stops at white space, quotes, separators, brackets and at a backslash that
# starts an escape; an escaped backslash (\\) is taken whole, so the end never splits an escape.
_UNQUOTED = r"(?:[^\s\"'`\\,;&|<>()\[\]{}]|\\\\|\\(?![nrtbfu\"'\\/]))+"
# A quoted value, after the groups vb (the backslashes of the opening quote: none in plain JSON,
# 1 in JSON nested in a JSON string, 3 one level deeper, 2**depth - 1) and vq (the quote). It is
# read as the JSON string it is, escape by escape *at its own depth*, up to the closing quote of
# that depth: 2*len(vb)+2 backslashes are an escaped backslash, 2*len(vb)+1 and a quote an escaped
# quote, len(vb)+1 and a character any other escape. So it never ends inside an escape, never
# runs past its closing quote, and takes the whole value even when it holds quotes.
_QUOTED = (
    r"(?:(?!(?P=vb)(?P=vq))"
    r"(?:(?P=vb)(?P=vb)\\(?:\\|(?P=vq))|(?P=vb)\\(?!(?P=vq))[^\\\r\n]|[^\\\r\n\"]))+"
)
_VALUE = rf"(?:(?P<vb>\\*)(?P<vq>[\"']))?(?P<secret>(?(vq){_QUOTED}|{_UNQUOTED}))"
_SEP = r"[ \t]*(?P<sep>=>|[:=])(?![=:])[ \t]*"

# Key names (whole attribute keys, or the key of a key=value pair in text) whose value is a
# secret. Anchored at the end: ``max_tokens``, ``input_tokens``, ``token_count``, ``tokenizer``,
# ``secret_name`` and ``public_key`` are not secret keys.
SECRET_KEYS = re.compile(
    r"(?i)(?:authorization|passw(?:or)?d|passphrase|[_.\-]pwd|secret|token|cookie|credentials?"
    r"|(?:api|secret|private|access|signing|encryption|master|client|account|session|auth|license"
    r"|subscription)[_.\-]?key|apikey)$"
)

_LITERALS = frozenset({"null", "true", "false", "none", "nil", "undefined"})
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _key_value(m: re.Match[str]) -> str | None:
    """``password: x`` and the like: only when the whole key names a secret, and not for values
    that are already masked or are not secrets (null, booleans; numbers under a token key)."""
    text, start = m.string, m.start("key")
    i = start
    while i > 0 and text[i - 1] in _KEY_CHARS and start - i < 100:
        i -= 1
    key = text[i : m.end("key")]
    if not SECRET_KEYS.search(key):
        return None
    value = m.group("secret")
    if value.strip("*") == "":
        return None
    if m.group("vq") is None:
        if value.lower() in _LITERALS or m.string.startswith(("(", "["), m.end()):
            return None  # null, true...; or code: ``api_key = os.environ["KEY"]``, ``f(x)``
        if _NUMBER.fullmatch(value):
            if key.lower().endswith("token"):
                return None  # a count, an id, an index
            quote = m.group("kq") or ""
            if m.group("sep") == ":" and quote.endswith('"'):
                return f"{quote}{REDACTED}{quote}"  # a JSON number: a JSON string in its place
    return REDACTED


def _if_credential(m: re.Match[str]) -> str | None:
    """A bearer token that has a digit or punctuation in it ("Bearer tokens" is prose)."""
    return REDACTED if re.search(r"[0-9._~+/\-]", m.group("secret")) else None


_TOKEN = r"[A-Za-z0-9_\-]"
_AUTH_SCHEMES = r"(?:bearer|basic|token|bot|digest|apikey|api-key|key|sso-key|otp|negotiate|ntlm|hmac)"

DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (
    # PEM blocks first: their base64 body can contain anything. Header and footer stay; the body
    # (newlines raw or escaped at any depth, legacy Proc-Type/DEK-Info lines) goes. Without a
    # footer (a cut text) the body runs to the first character a body cannot hold.
    SecretPattern(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?P<secret>(?:[A-Za-z0-9+/=:,\s]|-(?!----)|\\+[nrt])+)"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
        ("private key",),
    ),
    SecretPattern("anthropic", rf"sk-ant-{_after(7)}{_TOKEN}{{20,}}", ("sk-ant-",)),
    # sk-, sk-proj-, sk-svcacct-, sk-admin-, and the sk-<hex> keys of OpenAI-compatible APIs;
    # a digit is required so that kebab-case words after "sk-" are left alone
    SecretPattern("openai", rf"sk-{_after(3)}(?!ant-)(?=[A-Za-z_\-]*[0-9]){_TOKEN}{{20,}}", ("sk-",)),
    SecretPattern("google_api_key", rf"AIza{_after(4)}{_TOKEN}{{35,}}", ("aiza",)),
    SecretPattern("google_oauth", rf"ya29\.{_after(5)}{_TOKEN}{{20,}}", ("ya29.",)),
    SecretPattern(
        "aws_access_key_id",
        rf"A(?:KIA|SIA|BIA|CCA){_after(4)}(?=[A-Z]*[0-9])[A-Z0-9]{{16,}}",
        ("akia", "asia", "abia", "acca"),
    ),
    SecretPattern(
        "aws_secret_access_key",  # a 40-character secret right after its key name
        r"(?i)secret_?access_?key" + _KEY_QUOTE + r"[ \t]*(?:=>|[:=])?[ \t]*(?:\\*[\"'])?"
        r"(?P<secret>(?:[A-Za-z0-9+]|\\?/){40})(?![A-Za-z0-9+/=])",
        ("secret",),
        anchored=True,
    ),
    SecretPattern("github", rf"gh[pousr]_{_after(4)}[A-Za-z0-9]{{30,}}", ("ghp_", "gho_", "ghs_", "ghu_", "ghr_")),
    SecretPattern("github", rf"github_pat_{_after(11)}[A-Za-z0-9_]{{22,}}", ("github_pat_",)),
    SecretPattern(
        "gitlab",
        rf"gl(?:pat|dt|rt|ptt|ft|soat|oas)-{_after(2)}{_TOKEN}{{20,}}",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "gloas-"),
    ),
    SecretPattern("slack", rf"xox{_after(3)}(?:[abposre]|e\.xox[a-z])-[A-Za-z0-9\-]{{10,}}", ("xox",)),
    SecretPattern("slack", rf"xapp-{_after(5)}\d-[A-Za-z0-9\-]{{10,}}", ("xapp-",)),
    SecretPattern(
        "slack_webhook",
        r"hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/(?P<secret>(?:[A-Za-z0-9_\-]|\\?/)+)",
        ("hooks.slack.com",),
    ),
    SecretPattern(
        "discord_webhook",
        r"discord(?:app)?\.com\\?/api\\?/webhooks\\?/(?P<secret>(?:[A-Za-z0-9_\-]|\\?/)+)",
        ("discord",),
    ),
    SecretPattern("stripe", rf"sk_(?:live|test)_{_after(8)}[A-Za-z0-9]{{16,}}", ("sk_live_", "sk_test_")),
    SecretPattern("stripe", rf"rk_(?:live|test)_{_after(8, strict=True)}[A-Za-z0-9]{{16,}}", ("rk_live_", "rk_test_")),
    SecretPattern("stripe", rf"whsec_{_after(6)}[A-Za-z0-9+/=]{{24,}}", ("whsec_",)),
    SecretPattern("huggingface", rf"hf_{_after(3)}[A-Za-z0-9]{{30,}}", ("hf_",)),
    SecretPattern("npm", rf"npm_{_after(4)}[A-Za-z0-9]{{36,}}", ("npm_",)),
    SecretPattern("pypi", rf"pypi-AgE{_after(8)}{_TOKEN}{{50,}}", ("pypi-age",)),
    SecretPattern("sendgrid", rf"SG\.{_after(3)}{_TOKEN}{{16,}}\.{_TOKEN}{{16,}}", ("sg.",)),
    SecretPattern("groq", rf"gsk_{_after(4)}[A-Za-z0-9]{{40,}}", ("gsk_",)),
    SecretPattern("xai", rf"xai-{_after(4)}[A-Za-z0-9]{{40,}}", ("xai-",)),
    SecretPattern("jwt", rf"eyJ{_after(3)}{_TOKEN}{{8,}}\.{_TOKEN}{{8,}}\.{_TOKEN}*", ("eyj",)),
    # scheme://user:password@host: scheme, user and host stay
    SecretPattern(
        "url_password",
        r":(?:\\?/){2}[^\s:/?#@\"'\\<>]*:(?P<secret>[^\s/?#\"'\\<>]+)@",
        ("://", ":\\/\\/"),
    ),
    SecretPattern(
        "authorization",  # Authorization: <scheme> <credentials>: the scheme stays
        r"(?i)(?P<key>authorization)" + _KEY_QUOTE + r"[ \t]*[:=][ \t]*(?:\\*[\"'])?"
        rf"(?:{_AUTH_SCHEMES}[ \t]+)?+(?P<secret>{_UNQUOTED})",
        ("authorization",),
        anchored=True,
    ),
    SecretPattern(
        "bearer",
        rf"(?i)bearer{_after(6, strict=True)}[ \t]+(?P<secret>[A-Za-z0-9._~+/\-]{{12,}}=*)",
        ("bearer",),
        anchored=True,
        replace=_if_credential,
    ),
    SecretPattern(
        "cookie",  # Cookie / Set-Cookie: the whole header value
        r"(?i)cookie" + _KEY_QUOTE + r"[ \t]*[:=][ \t]*(?:\\*[\"'])?(?P<secret>[^\s\"'\\][^\r\n\"'\\]*)",
        ("cookie",),
        anchored=True,
    ),
    SecretPattern(
        "key_value",  # JSON, YAML, .env, Python repr, headers, query strings
        r"(?i)(?P<key>passw(?:or)?d|passphrase|pwd|secret|token|key|credentials?)(?P<kq>\\*[\"'])?"
        + _SEP
        + _VALUE,
        ("pass", "pwd", "secret", "token", "key", "credential"),
        anchored=True,
        replace=_key_value,
    ),
    SecretPattern(
        "query_secret",  # ?sig=, &key=, X-Amz-Signature=, ... (names too short or odd for key_value)
        r"(?i)(?<=[?&])(?:sig|key|pass|pw|x-amz-signature|x-amz-credential|x-amz-security-token)="
        r"(?P<secret>[^&#\s\"'\\<>]+)",
        ("sig=", "key=", "pass=", "pw=", "x-amz-"),
        anchored=True,
    ),
)


# --- the redactor -------------------------------------------------------------------------------


class _Rule(NamedTuple):
    name: str
    rx: re.Pattern[str]
    triggers: tuple[str, ...]
    anchored: bool
    replace: Callable[[re.Match[str]], str | None] | None
    grouped: bool


def _compile(p: SecretPattern | str | re.Pattern[str]) -> _Rule:
    if not isinstance(p, SecretPattern):
        p = SecretPattern("custom", p)
    rx = p.regex if isinstance(p.regex, re.Pattern) else re.compile(p.regex)
    triggers = tuple(t.lower() for t in p.triggers)
    if p.anchored and not triggers:
        raise ValueError(f"pattern {p.name!r}: anchored needs triggers")
    return _Rule(p.name, rx, triggers, p.anchored, p.replace, "secret" in rx.groupindex)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _lower(text: str) -> str:
    """Lower case with the same length as ``text`` (positions in one are positions in the other)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


class Redactor:
    """Finds secrets in text and replaces them with ``[REDACTED]``.

    ``patterns``: the patterns (default :data:`DEFAULT_PATTERNS`); ``extra``: more, tried after
    them; each a :class:`SecretPattern`, a regex string or a compiled regex (a plain regex is
    named ``custom``). ``secret_keys``: the attribute keys whose values :meth:`redact_value`
    replaces wholesale (default :data:`SECRET_KEYS`).
    """

    __slots__ = ("_rules", "_secret_keys")

    def __init__(
        self,
        patterns: Sequence[SecretPattern | str | re.Pattern[str]] | None = None,
        *,
        extra: Sequence[SecretPattern | str | re.Pattern[str]] = (),
        secret_keys: re.Pattern[str] | None = None,
    ) -> None:
        chosen = DEFAULT_PATTERNS if patterns is None else patterns
        object.__setattr__(self, "_rules", tuple(_compile(p) for p in (*chosen, *extra)))
        object.__setattr__(self, "_secret_keys", SECRET_KEYS if secret_keys is None else secret_keys)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Redactor is immutable")

    @property
    def kinds(self) -> tuple[str, ...]:
        """The names of the patterns, in the order they are applied (without repeats)."""
        return tuple(dict.fromkeys(r.name for r in self._rules))

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]`` (for key/value and header
        patterns, only the value)."""
        return self._run(text, None)

    def findings(self, text: str) -> list[str]:
        """The kind of each secret :meth:`redact` would replace, one entry per secret."""
        found: list[str] = []
        self._run(text, found)
        return found

    def redact_value(self, key: str, value: Any) -> Any:
        """An attribute value: a string under a key that names a secret (``authorization``,
        ``password``, ``api_key``, ``client_secret``, ``set-cookie``...) is replaced wholesale;
        other strings are redacted; lists and tuples element by element, mappings key by key;
        numbers, booleans and None are kept (they are never secrets by key)."""
        if isinstance(value, str):
            if value and self._secret_keys.search(key):
                return REDACTED
            return self._run(value, None)
        if isinstance(value, (list, tuple)):
            return type(value)(self.redact_value(key, v) for v in value)
        if isinstance(value, Mapping):
            return {k: self.redact_value(str(k), v) for k, v in value.items()}
        if isinstance(value, (bytes, bytearray)) and value and self._secret_keys.search(key):
            return REDACTED
        return value

    def redact_attributes(self, attributes: Mapping[str, Any] | None) -> dict[str, Any]:
        """:meth:`redact_value` over every item of an attribute mapping."""
        return {k: self.redact_value(k, v) for k, v in (attributes or {}).items()}

    def is_secret_key(self, key: str) -> bool:
        return bool(self._secret_keys.search(key))

    # --- engine ---

    def _run(self, text: str, found: list[str] | None) -> str:
        if not isinstance(text, str) or not text:
            return text
        low = _lower(text)
        for rule in self._rules:
            if rule.triggers and not any(t in low for t in rule.triggers):
                continue
            out = self._apply(rule, text, low, found)
            if out is not text:
                text, low = out, _lower(out)
        return text

    @staticmethod
    def _matches(rule: _Rule, text: str, low: str) -> Iterator[re.Match[str]]:
        if not rule.anchored:
            yield from rule.rx.finditer(text)
            return
        starts: set[int] = set()
        for t in rule.triggers:
            i = low.find(t)
            while i >= 0:
                starts.add(i)
                i = low.find(t, i + 1)
        end = 0
        for i in sorted(starts):
            if i < end:
                continue
            m = rule.rx.match(text, i)
            if m is not None and m.end() > i:
                end = m.end()
                yield m

    def _apply(self, rule: _Rule, text: str, low: str, found: list[str] | None) -> str:
        parts: list[str] = []
        last = 0
        for m in self._matches(rule, text, low):
            start, end = m.span("secret") if rule.grouped else m.span()
            if start < 0 or start == end or text[start:end] == REDACTED:
                continue
            new = REDACTED if rule.replace is None else rule.replace(m)
            if new is None:
                continue
            parts.append(text[last:start])
            parts.append(new)
            last = end
            if found is not None:
                found.append(rule.name)
        if not parts:
            return text
        parts.append(text[last:])
        return "".join(parts)
