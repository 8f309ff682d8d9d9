r"""Secret redaction for everything that leaves the process: span attributes (keys and values),
names of spans, events and scopes, status and exception messages, resource attributes,
recorded texts.

:class:`Redactor` replaces each secret it finds with ``[REDACTED]`` (for ``key: value`` pairs,
headers and URLs, only the value). It holds on raw text and on JSON-encoded text alike, the form
in which most texts ride on spans (a JSON document in a string attribute, itself JSON-encoded
again in an export file):

* A token is recognised by its own prefix (``sk-proj-``, ``AKIA``, ``ghp_`` ...), not after a
  ``\b`` word boundary: ``\b`` fails after an escaped newline (in ``\nsk-...`` the ``n`` is a
  word character) or a ``\u00e9`` escape. The left boundary here (:func:`word_start`) is "not
  after a letter, digit or underscore, *or* right after a ``\n``, ``\r``, ``\t``, ``\b``,
  ``\f`` or ``\uHHHH`` escape"; after ``\"`` the quote is a boundary already. It holds at every
  depth of escaping: ``\\n`` (JSON in JSON) also ends in ``\n``.
* No replacement starts or ends inside an escape sequence, at any depth: token bodies hold no
  backslash; an unquoted value stops at the first backslash that may start an escape; a quoted
  value is read as the JSON string it is, at its own depth of escaping (known from the
  backslashes before its opening quote), up to its closing quote. ``[REDACTED]`` needs no
  escaping, so redacting valid JSON gives valid JSON, and a JSON document inside a JSON string
  stays a valid document.

Speed: the patterns are not searched for one by one. A few scans find where their literal
starts ("triggers": ``sk-``, ``AKIA``, ``password``...) occur, and each pattern is tried only
there (the literal prefilter, ``callctx.components.literal_prefilter``). A 256 KiB text
takes 2 to 3 ms; a text made of nothing but triggers (``password=password=...``) at most about
a tenth of a second, since values have bounded lengths.

Names (attribute keys, span, event and scope names) repeat on every span: :meth:`Redactor.redact_name`
remembers the short ones it redacted (a bounded :class:`Memo`), so that a key costs a look-up.

Thread safety: a :class:`Redactor` is immutable after construction (compiled patterns in
tuples; its memo of names only ever maps a name to the same redacted name), so one instance can
be shared by every thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from callctx.components.literal_prefilter import Needle, Prefilter

__all__ = [
    "DEFAULT_PATTERNS",
    "REDACTED",
    "SECRET_KEYS",
    "Memo",
    "Redactor",
    "SecretPattern",
    "word_start",
]

REDACTED = "[REDACTED]"

_K = TypeVar("_K")
_V = TypeVar("_V")
_W = TypeVar("_W")


class Memo(Generic[_K, _W]):
    """Results remembered by key, at most ``size`` of them (then all are forgotten at once).
    Shared by threads without a lock: a result is only ever computed again, never mixed up."""

    __slots__ = ("_items", "_size")

    def __init__(self, size: int) -> None:
        self._items: dict[_K, _W] = {}
        self._size = size

    def get(self, key: _K, make: Callable[[], _W]) -> _W:
        """The result for ``key``, made by ``make()`` the first time."""
        try:
            return self._items[key]
        except KeyError:
            pass
        result = make()
        if len(self._items) >= self._size:
            self._items.clear()
        self._items[key] = result
        return result


class SecretPattern(NamedTuple):
    """One kind of secret.

    ``name``: the kind, as :meth:`Redactor.findings` reports it (several patterns may share one).
    ``regex``: the whole match is replaced, or only its ``secret`` group when it has one.
    ``triggers``: ASCII literals, one of which every match starts with (compared ignoring case
    when the regex ignores case). With triggers, the regex is tried only where one occurs, which
    is far faster than searching for it; without (or with a non-ASCII one), it is searched for.
    ``follow``: a regex that must match right after a trigger for the pattern to be tried there
    (checked during the scan for triggers, on an ASCII copy of the text where other characters
    are ``?``, lower-cased when the regex ignores case).
    ``replace``: given a match, the text to put instead of the secret, or None to leave the
    match alone; default ``[REDACTED]``.
    ``word``: a trigger only counts where it does not continue a word (the boundary of
    :func:`word_start`, which holds in JSON-escaped text too) and is followed by at least 8
    token characters (letters, digits, ``_ - .``): checked during the scan.
    """

    name: str
    regex: str | re.Pattern[str]
    triggers: tuple[str, ...] = ()
    replace: Callable[[re.Match[str]], str | None] | None = None
    follow: str = ""
    word: bool = False


# --- building blocks ----------------------------------------------------------------------------


_ESCAPES = "nrtbfu"  # letters that make an escape after a backslash: \n \r \t \b \f \uHHHH


def word_start(width: int, *, strict: bool = False) -> str:
    """Left boundary, checked after the ``width`` characters of a token's literal start: the
    token does not continue a word, or follows a ``\\n``-style or ``\\uHHHH`` escape. ``strict``
    for tokens whose first letter is an escape letter (``r``, ``b``, ``t``...): then a preceding
    backslash is not a boundary, since the two would be an escape sequence."""
    w = rf"[\s\S]{{{width}}}"
    word = r"[A-Za-z0-9_\\]" if strict else r"[A-Za-z0-9_]"
    return rf"(?:(?<!{word}{w})|(?<=\\[nrtbf]{w})|(?<=\\u[0-9A-Fa-f]{{4}}{w}))"


_KEY_QUOTE = r"(?:\\*[\"'])?"  # the quote closing a key: ", ', \" (JSON in JSON), \\\" ...
# An unquoted value: stops at white space, quotes, separators, brackets and at any backslash that
# may start an escape (so, in JSON, at every backslash: it never splits an escape, at any depth).
_UNQUOTED = r"(?:[^\s\"'`\\,;&|<>()\[\]{}]|\\(?![nrtbfu\"'\\/])){1,1024}"
# A quoted value, after the group vb (the backslashes of its opening quote: none in plain JSON,
# 1 in JSON nested in a JSON string, 3 one level deeper, 2**depth - 1) and the quote. It is
# read as the JSON string it is, escape by escape *at its own depth*, up to the closing quote of
# that depth: 2*len(vb)+2 backslashes are an escaped backslash, 2*len(vb)+1 and a quote an escaped
# quote, len(vb)+1 and a character any other escape. So it never ends inside an escape, never
# runs past its closing quote, and takes the whole value even when it holds quotes. A closing
# quote is one followed by what may follow a string (space, ``, : } ]``, a backslash, a quote,
# the end); another (``'{"password": "a\\"b"}'``, a repr of JSON) is taken as part of the value.
_AFTER_STRING = r"(?:[\s,;:}\])\\\"'&]|$)"


def _quoted(q: str, plain: str) -> str:
    """A value in ``q`` quotes (see above): ``plain`` characters go one by one, fast; backslashes
    and quotes as units, checked against the closing quote first."""
    units = rf"(?P=vb)(?P=vb)\\(?:\\|{q})|(?P=vb)\\(?!{q})[^\\\r\n]|(?P=vb){q}"
    return rf"(?:{plain}|(?!(?P=vb){q}{_AFTER_STRING})(?:{units})){{1,1024}}"


_DQ = _quoted('"', r'[^\\\r\n"]')
_SQ = _quoted("'", r"[^\\\r\n\"']")
_VALUE = rf"(?:(?P<vb>\\*)(?:(?P<dq>\")|(?P<sq>')))?(?P<secret>(?(dq){_DQ}|(?(sq){_SQ}|{_UNQUOTED})))"
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
# The key of a key_value pair: a word of SECRET_KEYS at the end of the key (so ``DB_PASSWORD``,
# ``x-api-key``, ``clientSecret``, but not ``max_tokens``, ``cache_key``, ``PWD``). For ``key``,
# the word before it is checked by look-behind (after ``key``), so that other keys cost nothing.
_KEY_WORD = r"(?P<key>passw(?:or)?d|passphrase|(?<=[_.\-])pwd|secret|token|credentials?)"
_KEY_WORDS = (  # grouped by length: each look-behind has a fixed width
    "api",
    "auth",
    "secret|access|master|client",
    "private|signing|account|session|license",
    "encryption",
    "subscription",
)
_KEY_AFTER = "|".join(f"(?<=(?:{words}){sep}key)" for words in _KEY_WORDS for sep in ("", r"[_.\-]"))


def _key_value(m: re.Match[str]) -> str | None:
    """``password: x`` and the like, but not for values that are already masked or are not
    secrets: null, booleans, code (``api_key = os.environ["KEY"]``), numbers under a token key."""
    value = m.group("secret")
    if value.strip("*") == "":
        return None
    if m.group("dq") is None and m.group("sq") is None:
        if value.lower() in _LITERALS or m.string.startswith(("(", "["), m.end()):
            return None
        if _NUMBER.fullmatch(value):
            if m.group("key").lower() == "token":
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
_FOLLOW_KEY = r"(?:\\*[\"'])?[ \t]*[:=]"  # what follows a key name: its quote, the separator
_SLACK = ("xoxa-", "xoxb-", "xoxe-", "xoxo-", "xoxp-", "xoxr-", "xoxs-")

# A PEM private key. With its footer: everything between header and footer (up to the first
# five dashes, within 32 KiB, holding a run of 16 base64 characters), whatever joins its lines.
# Cut short (no footer): the body runs to the first character a body cannot hold: base64,
# white space, escaped newlines at any depth, Proc-Type/DEK-Info punctuation, and the separator
# between the header and the first line (`` | ``, ``", "``, ``<br>``...: ``sep``), which stands
# for a line break.
_PEM_HEAD = r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_FOOT = r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_ANY = r"(?:[^-]|-(?!----))"
_PEM = (
    _PEM_HEAD
    + r"(?:(?=(?P<sep><br\s*/?>|[^A-Za-z0-9+/=\\\-]{1,8})(?:[A-Za-z0-9+/]{16}|Proc-Type:)))?"
    + rf"(?P<secret>(?>{_PEM_ANY}{{0,256}}?[A-Za-z0-9+/]{{16}}){_PEM_ANY}{{0,32768}}+(?={_PEM_FOOT})"
    + r"|(?:(?(sep)(?P=sep)|(?!))|[A-Za-z0-9+/=:,\s]|-(?!----)|\\+[nrt])++)"
    + rf"(?:{_PEM_FOOT})?"
)
# Inside a PEM body: an escape (at any depth) or a run of base64 characters.
_PEM_PIECE = re.compile(r"\\+(?:u[0-9A-Fa-f]{4}|[\s\S])|(?P<run>[A-Za-z0-9+/=]+)")
_JSON_WORD = re.compile(r"\d+(?:[eE]\d+)?|true|false|null")


def _pem_body(m: re.Match[str]) -> str:
    """The body of a PEM key, gone. When its lines were joined by quotes (a list of lines, in
    JSON or a repr), each line goes on its own, so that the quotes, and the JSON around them,
    stay as they were (a number or a literal between them too)."""
    body = m.group("secret")
    if '"' not in body and "'" not in body:
        return REDACTED

    def piece(p: re.Match[str]) -> str:
        run = p.group("run")
        return p.group() if run is None or _JSON_WORD.fullmatch(run) else REDACTED

    return _PEM_PIECE.sub(piece, body)


DEFAULT_PATTERNS: tuple[SecretPattern, ...] = (
    # PEM blocks: header and footer stay; the body goes, whatever its lines were joined with on
    # the way (newlines raw or escaped at any depth, `` | ``, spaces, nothing, quotes of a list
    # of lines) and with legacy Proc-Type/DEK-Info lines (:data:`_PEM`).
    SecretPattern("private_key", _PEM, ("-----BEGIN",), _pem_body),
    SecretPattern("anthropic", rf"sk-ant-{word_start(7)}{_TOKEN}{{20,}}", ("sk-ant-",), word=True),
    # sk-, sk-proj-, sk-svcacct-, sk-admin-, and the sk-<hex> keys of OpenAI-compatible APIs;
    # a digit is required so that kebab-case words after "sk-" are left alone
    SecretPattern(
        "openai",
        rf"sk-{word_start(3)}(?!ant-)(?=[A-Za-z_\-]*[0-9]){_TOKEN}{{20,}}",
        ("sk-",),
        follow=r"(?!ant-)(?=[A-Za-z_\-]*[0-9])[A-Za-z0-9_\-]{20}",
        word=True,
    ),
    SecretPattern("google_api_key", rf"AIza{word_start(4)}{_TOKEN}{{35,}}", ("AIza",), word=True),
    SecretPattern("google_oauth", rf"ya29\.{word_start(5)}{_TOKEN}{{20,}}", ("ya29.",), word=True),
    SecretPattern("google_client_secret", rf"GOCSPX-{word_start(7)}{_TOKEN}{{20,}}", ("GOCSPX-",), word=True),
    SecretPattern(
        "aws_access_key_id",
        rf"A(?:KIA|SIA|BIA|CCA){word_start(4)}[A-Z0-9]{{16}}(?![A-Za-z0-9])",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        word=True,
    ),
    SecretPattern(
        "aws_secret_access_key",  # a 40-character secret right after its key name
        r"(?i)secret_?access_?key" + _KEY_QUOTE + r"[ \t]*(?:=>|[:=])?[ \t]*(?:\\*[\"'])?"
        r"(?P<secret>(?:[A-Za-z0-9+]|\\?/){40})(?![A-Za-z0-9+/=])",
        ("secret",),
        follow=r"_?access_?key",
    ),
    SecretPattern(
        "github",
        rf"gh[pousr]_{word_start(4)}[A-Za-z0-9]{{30,}}|github_pat_{word_start(11)}[A-Za-z0-9_]{{22,}}",
        ("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_"),
        word=True,
    ),
    SecretPattern(
        "gitlab",
        rf"gl{word_start(2)}(?:pat|dt|rt|ptt|ft|soat|oas)-{_TOKEN}{{20,}}",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "gloas-"),
        word=True,
    ),
    SecretPattern(
        "slack",
        rf"xox{word_start(3)}[abposre]-[A-Za-z0-9\-]{{10,}}|xapp-{word_start(5)}\d-[A-Za-z0-9\-]{{10,}}",
        (*_SLACK, "xapp-"),
        word=True,
    ),
    SecretPattern(
        "slack_webhook",
        r"hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/(?P<secret>(?:[A-Za-z0-9_\-]|\\?/)+)",
        ("hooks.slack.com",),
    ),
    SecretPattern(
        "stripe",
        rf"sk_(?:live|test)_{word_start(8)}[A-Za-z0-9]{{16,}}"
        rf"|rk_(?:live|test)_{word_start(8, strict=True)}[A-Za-z0-9]{{16,}}"
        rf"|whsec_{word_start(6)}[A-Za-z0-9+/=]{{24,}}",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
        word=True,
    ),
    SecretPattern("huggingface", rf"hf_{word_start(3)}[A-Za-z0-9]{{30,}}", ("hf_",), word=True),
    SecretPattern("npm", rf"npm_{word_start(4)}[A-Za-z0-9]{{36,}}", ("npm_",), word=True),
    SecretPattern("pypi", rf"pypi-AgE{word_start(8)}{_TOKEN}{{50,}}", ("pypi-AgE",), word=True),
    SecretPattern("sendgrid", rf"SG\.{word_start(3)}{_TOKEN}{{16,}}\.{_TOKEN}{{16,}}", ("SG.",), word=True),
    SecretPattern("groq", rf"gsk_{word_start(4)}[A-Za-z0-9]{{40,}}", ("gsk_",), word=True),
    SecretPattern("xai", rf"xai-{word_start(4)}[A-Za-z0-9]{{40,}}", ("xai-",), word=True),
    # a JWT, or what is left of one cut short (its header alone, base64 of '{"', is enough)
    SecretPattern("jwt", rf"eyJ{word_start(3)}{_TOKEN}{{8,}}(?:\.{_TOKEN}*){{0,2}}", ("eyJ",), word=True),
    # scheme://user:password@host: scheme, user and host stay
    SecretPattern(
        "url_password",
        r":(?:\\?/){2}[^\s:/?#@\"'\\<>]{0,256}:(?P<secret>[^\s/?\"'\\<>]{1,256})@",
        ("://", ":\\/\\/"),
    ),
    SecretPattern(
        "authorization",  # Authorization: <scheme> <credentials>: the scheme stays
        r"(?i)authorization" + _KEY_QUOTE + r"[ \t]*[:=][ \t]*(?:\\*[\"'])?"
        rf"(?:{_AUTH_SCHEMES}[ \t]+)?+(?P<secret>{_UNQUOTED})",
        ("authorization",),
        follow=_FOLLOW_KEY,
    ),
    SecretPattern(
        "bearer",
        rf"(?i)bearer{word_start(6, strict=True)}[ \t]+(?P<secret>[A-Za-z0-9._~+/\-]{{12,}}=*)",
        ("bearer",),
        _if_credential,
        follow=r"[ \t]",
    ),
    SecretPattern(
        "cookie",  # Cookie / Set-Cookie: the whole header value
        r"(?i)cookie" + _KEY_QUOTE + r"[ \t]*[:=][ \t]*(?:\\*[\"'])?(?P<secret>[^\s\"'\\][^\r\n\"'\\]{0,4096})",
        ("cookie",),
        follow=_FOLLOW_KEY,
    ),
    SecretPattern(
        "key_value",  # JSON, YAML, .env, Python repr, headers, query strings
        rf"(?i){_KEY_WORD}(?P<kq>\\*[\"'])?" + _SEP + _VALUE,
        ("password", "passwd", "passphrase", "pwd", "secret", "token", "credential", "credentials"),
        _key_value,
        follow=_FOLLOW_KEY,
    ),
    SecretPattern(
        "key_value",  # api_key, x-api-key, secretKey, ...
        rf"(?i)(?P<key>key)(?:{_KEY_AFTER})(?P<kq>\\*[\"'])?" + _SEP + _VALUE,
        ("key",),
        _key_value,
        follow=f"(?:{_KEY_AFTER}){_FOLLOW_KEY}",
    ),
    SecretPattern(
        "query_secret",  # ?sig=, &key=, X-Amz-Signature=, ... (names too short or odd for key_value)
        r"(?i)[?&](?:sig|key|pass|pw|x-amz-signature|x-amz-credential|x-amz-security-token)="
        r"(?P<secret>[^&#\s\"'\\<>]{1,2048})",
        tuple(f"{c}{k}" for c in "?&" for k in ("sig=", "key=", "pass=", "pw=", "x-amz-")),
    ),
)


# --- the engine ---------------------------------------------------------------------------------
#
# The triggers of all the patterns are found together by the literal prefilter
# (callctx.components.literal_prefilter), on an ASCII copy of the text; a trigger's ``follow`` (and
# its word boundary) is part of what it looks for, so that ``max_tokens`` or ``task-runner`` do not
# even count as found. A pattern is then tried only where one of its triggers was found.


class _Rule(NamedTuple):
    name: str
    rx: re.Pattern[str]
    needles: tuple[Needle, ...]
    replace: Callable[[re.Match[str]], str | None] | None
    grouped: bool


def _compile(p: SecretPattern | str | re.Pattern[str]) -> _Rule:
    if not isinstance(p, SecretPattern):
        p = SecretPattern("custom", p)
    rx = p.regex if isinstance(p.regex, re.Pattern) else re.compile(p.regex)
    lower = bool(rx.flags & re.IGNORECASE)
    needles: dict[Needle, None] = {}
    for t in p.triggers if all(t.isascii() for t in p.triggers) else ():  # else: searched for
        if t:
            follow = (
                word_start(len(t), strict=t[0] in _ESCAPES) + r"(?=[A-Za-z0-9_\-.]{8})" if p.word else ""
            ) + p.follow
            needles[Needle(t.lower() if lower else t, follow, lower)] = None
    return _Rule(p.name, rx, tuple(needles), p.replace, "secret" in rx.groupindex)


_WINDOW = 64  # inside a secret found, starts this close to its end are tried again
_NAME = 256  # names up to this long are remembered


class Redactor:
    """Finds secrets in text and replaces them with ``[REDACTED]``.

    ``patterns``: the patterns (default :data:`DEFAULT_PATTERNS`); ``extra``: more, after them;
    each a :class:`SecretPattern`, a regex string or a compiled regex (a plain regex is named
    ``custom`` and searched for everywhere). Where the matches of several patterns overlap, the
    union goes, counted once, as the kind of the earliest pattern. ``secret_keys``: the attribute
    keys whose values :meth:`redact_value` replaces wholesale (default :data:`SECRET_KEYS`).
    """

    __slots__ = ("_names", "_prefilter", "_rules", "_secret_keys")
    _names: Memo[str, str]
    _prefilter: Prefilter
    _rules: tuple[_Rule, ...]
    _secret_keys: re.Pattern[str]

    def __init__(
        self,
        patterns: Sequence[SecretPattern | str | re.Pattern[str]] | None = None,
        *,
        extra: Sequence[SecretPattern | str | re.Pattern[str]] = (),
        secret_keys: re.Pattern[str] | None = None,
    ) -> None:
        chosen = DEFAULT_PATTERNS if patterns is None else patterns
        rules = tuple(_compile(p) for p in (*chosen, *extra))
        object.__setattr__(self, "_rules", rules)
        object.__setattr__(self, "_prefilter", Prefilter((n for r in rules for n in r.needles), ascii=True))
        object.__setattr__(self, "_secret_keys", SECRET_KEYS if secret_keys is None else secret_keys)
        object.__setattr__(self, "_names", Memo[str, str](4096))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Redactor is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a Redactor is immutable")

    @property
    def kinds(self) -> tuple[str, ...]:
        """The names of the patterns, in order (without repeats)."""
        return tuple(dict.fromkeys(r.name for r in self._rules))

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]`` (for key/value and header
        patterns, only the value)."""
        return self._run(text, None)

    def redact_name(self, name: str) -> str:
        """A name (an attribute key, a span, event or scope name) redacted as by :meth:`redact`;
        names up to 256 characters are remembered, since they repeat on every span."""
        if len(name) > _NAME:
            return self._run(name, None)
        return self._names.get(name, lambda: self._run(name, None))

    def findings(self, text: str) -> list[str]:
        """The kind of each secret :meth:`redact` replaces, one entry per secret, in text order."""
        found: list[str] = []
        self._run(text, found)
        return found

    def redact_value(self, key: str, value: Any) -> Any:
        """An attribute value: a string under a key that names a secret (``authorization``,
        ``password``, ``api_key``, ``client_secret``, ``set-cookie``...) is replaced wholesale;
        other strings are redacted; lists and tuples element by element, mappings key by key
        (:meth:`redact_mapping`: their keys redacted too); numbers, booleans and None are kept
        (they are never secrets by key)."""
        if isinstance(value, str):
            if value and self._secret_keys.search(key):
                return REDACTED
            return self._run(value, None)
        if isinstance(value, (list, tuple)):
            return type(value)(self.redact_value(key, v) for v in value)
        if isinstance(value, Mapping):
            return self.redact_mapping(value, self.redact_value)
        if isinstance(value, (bytes, bytearray)) and value and self._secret_keys.search(key):
            return REDACTED
        return value

    def redact_attributes(self, attributes: Mapping[str, Any] | None) -> dict[str, Any]:
        """:meth:`redact_value` over every item of an attribute mapping, keys redacted too."""
        return self.redact_mapping(attributes, self.redact_value)

    def redact_mapping(self, mapping: Mapping[_K, _V] | None, value: Callable[[str, _V], _W]) -> dict[str, _W]:
        """``mapping`` with its keys redacted (a secret used as a key goes as anywhere else) and
        each value replaced by ``value(key, v)``, given the key as it was (which tells whether
        the value is a secret by its key). Keys redacted alike are told apart by a number
        (``[REDACTED]``, ``[REDACTED] 2``), so that no value is lost."""
        out: dict[str, _W] = {}
        for k, v in (mapping or {}).items():
            key = k if isinstance(k, str) else str(k)
            new = self.redact_name(key)
            if new in out:
                n = 2
                while f"{new} {n}" in out:
                    n += 1
                new = f"{new} {n}"
            out[new] = value(key, v)
        return out

    def is_secret_key(self, key: str) -> bool:
        """Whether :meth:`redact_value` replaces a string under ``key`` wholesale."""
        return bool(self._secret_keys.search(key))

    # --- engine ---

    def _matches(self, text: str) -> Iterator[tuple[int, int, str, int, str]]:
        """(start, end, replacement, rule index, kind) of every secret, unsorted."""
        at = self._prefilter.find(text)
        for index, rule in enumerate(self._rules):
            if not rule.needles:
                for m in rule.rx.finditer(text):
                    hit = _hit(rule, m)
                    if hit is not None:
                        yield (*hit, index, rule.name)
                continue
            found = [at[n] for n in rule.needles if n in at]
            if not found:
                continue
            # Every start is tried, even inside an earlier match: matches may overlap (the union
            # goes), and a match that is let alone may hold a secret. But not inside a secret
            # found, except near its end (where a value cut short by a quote or a colon may have
            # a secret of its own just after it); and never inside a token (a rule with no secret
            # group: it would only be a piece of it). With values of bounded length, this keeps
            # the work linear even on texts made of triggers.
            cover = (0, 0)  # the secret found last, or the token
            for i in found[0] if len(found) == 1 else sorted({p for f in found for p in f}):
                if cover[0] <= i < cover[1] - (_WINDOW if rule.grouped else 0):
                    continue
                at_i = rule.rx.match(text, i)
                hit = None if at_i is None else _hit(rule, at_i)
                if hit is not None:
                    if hit[1] > cover[1]:
                        cover = hit[:2]
                    yield (*hit, index, rule.name)

    def _run(self, text: str, found: list[str] | None) -> str:
        if not isinstance(text, str) or not text:
            return text
        hits = sorted(self._matches(text), key=lambda h: (h[0], h[1], h[3]))
        if not hits:
            return text
        # overlapping secrets make one region, of the earliest rule's kind
        regions: list[list[Any]] = []  # [start, end, rule index, replacement, kind]
        for start, end, new, index, name in hits:
            last = regions[-1] if regions else None
            if last is None or start >= last[1]:
                regions.append([start, end, index, new, name])
            elif (start, end) == (last[0], last[1]):
                if index < last[2]:
                    last[2:] = [index, new, name]
            else:
                last[1], last[3] = max(last[1], end), REDACTED
                if index < last[2]:
                    last[2], last[4] = index, name
        parts: list[str] = []
        pos = 0
        for start, end, _, new, name in regions:
            parts += (text[pos:start], new)
            pos = end
            if found is not None:
                found.append(name)
        parts.append(text[pos:])
        return "".join(parts)


def _hit(rule: _Rule, m: re.Match[str]) -> tuple[int, int, str] | None:
    """(start, end, replacement) of the secret in a match, or None when there is nothing to do."""
    start, end = m.span("secret") if rule.grouped else m.span()
    if start < 0 or start == end or m.string[start:end] == REDACTED:
        return None
    new = REDACTED if rule.replace is None else rule.replace(m)
    return None if new is None else (start, end, new)
