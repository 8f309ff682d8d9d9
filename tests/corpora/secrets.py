"""A corpus of fake secrets, and of the texts they hide in, for the redaction tests.

Every secret is fake but has the shape of the real thing: prefix, length, alphabet, separators.
They are generated at import from a fixed seed rather than written out, so that no
secret-shaped literal sits in the repository for a secret scanner (or push protection) to flag;
the values are the same on every run.

* :data:`SECRETS`: secrets recognisable by their own shape (``sk-proj-...``, ``AKIA...``, a PEM
  block...), as :class:`Secret` (kind, text, sensitive): ``text`` is what goes into a carrier,
  ``sensitive`` the part of it that must not survive (the whole text, except for a PEM block,
  whose header and footer may stay, and a webhook URL, whose host may stay).
* :data:`IN_CONTEXT`: secrets recognisable only by what is around them (``password: ...``,
  ``Authorization: Basic ...``, ``postgres://user:pw@host``), in the same form.
* :data:`SEPARATED_KEYS` (part of :data:`SECRETS`): PEM private keys whose line breaks were
  replaced on the way (`` | ``, spaces, a literal ``\\n`` or ``\\r\\n``, nothing), and one cut short.
* :data:`CARRIERS`: functions that put a text into a larger one, in the shapes texts take on the
  way out of an agent: prose, JSON (once, twice, after an escaped newline, tab, quote, or
  ``\\uXXXX``), YAML, ``.env``, a query string, a header, a URL, an exception, a ``repr()``.
  :data:`JSON_CARRIERS` names the ones whose output is JSON, :data:`NESTED_JSON` the ones that
  hold JSON in a JSON string.
* :func:`leaked`: whether any part of a sensitive string survives in a text, raw or JSON-escaped;
  :func:`leaks_in` the same for many strings in one large text.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from typing import NamedTuple

_rng = random.Random(20240501)

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
BASE32 = string.ascii_uppercase + "234567"


def _pick(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _digits(n: int) -> str:
    return str(_rng.randint(1, 9)) + _pick(string.digits, n - 1)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(alg: str, sig_bytes: int) -> str:
    header = _b64url(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    claims = {"sub": _digits(10), "name": "Ada Lovelace", "iat": 1714560000, "exp": 1714563600}
    payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
    return f"{header}.{payload}.{_b64url(_rng.randbytes(sig_bytes))}"


def _pem(label: str, body_bytes: int, width: int = 64, newline: str = "\n") -> tuple[str, str]:
    """A PEM block and its body (the sensitive part)."""
    b64 = base64.b64encode(_rng.randbytes(body_bytes)).decode()
    body = newline.join(b64[i : i + width] for i in range(0, len(b64), width))
    return f"-----BEGIN {label}-----{newline}{body}{newline}-----END {label}-----", body


class Secret(NamedTuple):
    kind: str  # the kind the Redactor reports
    text: str  # what a carrier embeds
    sensitive: str  # what must be gone afterwards


def _self(kind: str, text: str) -> Secret:
    return Secret(kind, text, text)


_rsa, _rsa_body = _pem("RSA PRIVATE KEY", 1190)
_pkcs8, _pkcs8_body = _pem("PRIVATE KEY", 1218)
_ec, _ec_body = _pem("EC PRIVATE KEY", 121)
_ssh, _ssh_body = _pem("OPENSSH PRIVATE KEY", 399, width=70)
_crlf, _crlf_body = _pem("ENCRYPTED PRIVATE KEY", 1300, newline="\r\n")
_slack_path = f"T{_pick(BASE32[:26], 8)}/B{_pick(string.ascii_uppercase + string.digits, 10)}/{_pick(ALNUM, 24)}"

SECRETS: list[Secret] = [
    # OpenAI: legacy user keys, project keys, service-account and admin keys
    _self("openai", f"sk-{_pick(ALNUM, 20)}T3BlbkFJ{_pick(ALNUM, 20)}"),
    _self("openai", f"sk-proj-{_pick(URLSAFE, 74)}T3BlbkFJ{_pick(URLSAFE, 74)}"),
    _self("openai", f"sk-proj-{_pick(URLSAFE, 48)}"),
    _self("openai", f"sk-svcacct-{_pick(URLSAFE, 74)}T3BlbkFJ{_pick(URLSAFE, 74)}"),
    _self("openai", f"sk-admin-{_pick(URLSAFE, 74)}T3BlbkFJ{_pick(URLSAFE, 74)}"),
    # OpenAI-compatible providers that use sk- too (OpenRouter, DeepSeek)
    _self("openai", f"sk-or-v1-{_pick(HEX, 64)}"),
    _self("openai", f"sk-{_pick(HEX, 32)}"),
    # Anthropic
    _self("anthropic", f"sk-ant-api03-{_pick(URLSAFE, 93)}AA"),
    _self("anthropic", f"sk-ant-admin01-{_pick(URLSAFE, 93)}AA"),
    # Google
    _self("google_api_key", f"AIzaSy{_pick(URLSAFE, 33)}"),
    _self("google_api_key", f"AIza{_pick(URLSAFE, 35)}"),
    _self("google_oauth", f"ya29.a0{_pick(URLSAFE, 150)}"),
    _self("google_client_secret", f"GOCSPX-{_pick(URLSAFE, 28)}"),
    # AWS access key ids (long-term and temporary)
    _self("aws_access_key_id", f"AKIA{_pick(BASE32, 16)}"),
    _self("aws_access_key_id", f"ASIA{_pick(BASE32, 16)}"),
    # GitHub
    _self("github", f"ghp_{_pick(ALNUM, 36)}"),
    _self("github", f"gho_{_pick(ALNUM, 36)}"),
    _self("github", f"ghs_{_pick(ALNUM, 36)}"),
    _self("github", f"ghu_{_pick(ALNUM, 36)}"),
    _self("github", f"ghr_{_pick(ALNUM, 76)}"),
    _self("github", f"github_pat_11{_pick(string.ascii_uppercase + string.digits, 20)}_{_pick(ALNUM, 59)}"),
    # GitLab
    _self("gitlab", f"glpat-{_pick(URLSAFE, 20)}"),
    _self("gitlab", f"glrt-{_pick(URLSAFE, 20)}"),
    # Slack
    _self("slack", f"xoxb-{_digits(12)}-{_digits(13)}-{_pick(ALNUM, 24)}"),
    _self("slack", f"xoxp-{_digits(12)}-{_digits(12)}-{_digits(13)}-{_pick(HEX, 32)}"),
    _self("slack", f"xoxe-1-{_pick(ALNUM, 140)}"),
    _self("slack", f"xapp-1-A{_pick(string.ascii_uppercase + string.digits, 10)}-{_digits(13)}-{_pick(HEX, 64)}"),
    Secret("slack_webhook", f"https://hooks.slack.com/services/{_slack_path}", _slack_path),
    # Stripe
    _self("stripe", f"sk_live_51{_pick(ALNUM, 97)}"),
    _self("stripe", f"rk_live_51{_pick(ALNUM, 97)}"),
    _self("stripe", f"sk_test_{_pick(ALNUM, 24)}"),
    _self("stripe", f"whsec_{_pick(ALNUM, 32)}"),
    # model hubs, registries, mail, inference APIs
    _self("huggingface", f"hf_{_pick(ALNUM, 34)}"),
    _self("npm", f"npm_{_pick(ALNUM, 36)}"),
    _self("pypi", f"pypi-AgEIcHlwaS5vcmc{_pick(URLSAFE, 140)}"),
    _self("sendgrid", f"SG.{_pick(URLSAFE, 22)}.{_pick(URLSAFE, 43)}"),
    _self("groq", f"gsk_{_pick(ALNUM, 52)}"),
    _self("xai", f"xai-{_pick(ALNUM, 80)}"),
    # JWTs
    _self("jwt", _jwt("HS256", 32)),
    _self("jwt", _jwt("RS256", 256)),
    # private keys: header and footer may stay, the body may not
    Secret("private_key", _rsa, _rsa_body),
    Secret("private_key", _pkcs8, _pkcs8_body),
    Secret("private_key", _ec, _ec_body),
    Secret("private_key", _ssh, _ssh_body),
    Secret("private_key", _crlf, _crlf_body),
]

_aws_secret = _pick(B64, 40)
_sts_secret = _pick(B64, 40)
_db_pw = _pick(ALNUM, 14) + "!#"
_redis_pw = _pick(ALNUM, 24)
_mongo_pw = _pick(ALNUM, 16) + "%40" + _pick(ALNUM, 4)
_opaque = _pick(ALNUM + "._-", 48)
_basic = base64.b64encode(f"ada:{_pick(ALNUM, 18)}".encode()).decode()
_drf = _pick(HEX, 40)
_session = _pick(ALNUM, 32)
_csrf = _pick(ALNUM, 32)
_hostsess = _pick(URLSAFE, 43)
_json_pw = _pick(ALNUM + "!@#$%^&*()-", 20)
_yaml_pw = _pick(ALNUM, 22)
_env_pw = _pick(ALNUM, 18)
_env_secret = _pick(ALNUM + "/+", 40)
_client_secret = _pick(URLSAFE, 32)
_access_token = _pick(ALNUM + "._-", 64)
_api_key = _pick(HEX, 32)
_kwarg_pw = _pick(ALNUM, 16)
_sas = _pick(ALNUM + "%", 44)
_amz = _pick(HEX, 64)
_x_api_key = _pick(ALNUM, 40)
_quoted_pw = _pick(ALNUM, 12) + '"' + _pick(ALNUM, 12)  # a password with a quote in it

IN_CONTEXT: list[Secret] = [
    Secret("aws_secret_access_key", f"aws_secret_access_key = {_aws_secret}", _aws_secret),
    Secret("aws_secret_access_key", f'"SecretAccessKey": "{_sts_secret}"', _sts_secret),
    Secret("url_password", f"postgresql://app_user:{_db_pw}@db.internal:5432/app", _db_pw),
    Secret("url_password", f"redis://:{_redis_pw}@cache.internal:6379/0", _redis_pw),
    Secret("url_password", f"mongodb+srv://admin:{_mongo_pw}@cluster0.example.net/?retryWrites=true", _mongo_pw),
    Secret("authorization", f"Authorization: Bearer {_opaque}", _opaque),
    Secret("authorization", f"Authorization: Basic {_basic}", _basic),
    Secret("authorization", f"Authorization: Token {_drf}", _drf),
    Secret("cookie", f"Cookie: sessionid={_session}; csrftoken={_csrf}", f"sessionid={_session}; csrftoken={_csrf}"),
    Secret("cookie", f"Set-Cookie: __Host-session={_hostsess}; Path=/; Secure; HttpOnly", _hostsess),
    Secret("key_value", json.dumps({"user": "ada", "password": _json_pw}), _json_pw),
    Secret("key_value", f"database:\n  host: db.internal\n  password: {_yaml_pw}\n", _yaml_pw),
    Secret("key_value", f"DB_PASSWORD={_env_pw}", _env_pw),
    Secret("key_value", f'export STRIPE_SECRET="{_env_secret}"', _env_secret),
    Secret("key_value", f"client_id=web&client_secret={_client_secret}&grant_type=client_credentials", _client_secret),
    Secret("key_value", f"https://api.example.com/v1/me?access_token={_access_token}&fields=id", _access_token),
    Secret("key_value", f"X-Api-Key: {_x_api_key}", _x_api_key),
    Secret("key_value", f"{{'api_key': '{_api_key}', 'region': 'eu'}}", _api_key),
    Secret("key_value", f"client.login(user='ada', password='{_kwarg_pw}')", _kwarg_pw),
    Secret("key_value", json.dumps({"password": _quoted_pw}), _quoted_pw),
    Secret("query_secret", f"https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sig={_sas}", _sas),
    Secret("query_secret", f"https://b.s3.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature={_amz}", _amz),
]

# Private keys whose line breaks were replaced on the way (an exception message joined with " | ",
# text flattened to spaces, literal "\n" or "\r\n" two-character sequences, lines joined with
# nothing), and one cut short with no footer: made after the rest, so the values above stay.
_SEPARATORS = (" | ", " ", "\\n", "\\r\\n", "")
SEPARATED_KEYS: list[Secret] = [Secret("private_key", *_pem("PRIVATE KEY", 1218, newline=sep)) for sep in _SEPARATORS]
_cut, _ = _pem("RSA PRIVATE KEY", 1190, newline=" | ")
_cut = _cut[: len(_cut) // 2]
SEPARATED_KEYS.append(Secret("private_key", _cut, _cut[len("-----BEGIN RSA PRIVATE KEY----- | ") :]))
SECRETS += SEPARATED_KEYS


# --- carriers ----------------------------------------------------------------------------------


def plain(s: str) -> str:
    return f"Use {s} for the staging deploy, thanks."


def after_newline(s: str) -> str:
    return f"first line\n{s}\nlast line"


def json_newline(s: str) -> str:
    return json.dumps({"note": f"line one\n{s}", "n": 1})


def json_tab(s: str) -> str:
    return json.dumps({"note": f"column\t{s}", "n": 1})


def json_quote(s: str) -> str:
    return json.dumps({"note": f'he said "{s}" twice', "n": 1})


def json_unicode(s: str) -> str:
    return json.dumps({"note": f"café\u00a0{s} — ok", "n": 1})  # ensure_ascii: \u00e9\u00a0 before it


def json_twice(s: str) -> str:
    inner = json.dumps([{"role": "user", "content": f"my key:\n{s}"}])
    return json.dumps({"gen_ai.prompt": inner, "n": 1})


def json_thrice(s: str) -> str:
    inner = json.dumps({"tool": "shell", "args": json.dumps({"cmd": f"deploy\t{s}"})})
    return json.dumps({"event": inner, "n": 1})


def yaml_doc(s: str) -> str:
    return f"service:\n  name: billing\n  api_key: {s}\n  retries: 3\n"


def dotenv(s: str) -> str:
    return f'APP_ENV=production\nexport SERVICE_TOKEN="{s}"\nLOG_LEVEL=info\n'


def query_string(s: str) -> str:
    return f"GET https://api.example.com/v1/items?limit=10&token={s}&page=2 HTTP/1.1"


def auth_header(s: str) -> str:
    return f"POST /v1/chat HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer {s}\r\nAccept: */*\r\n"


def url_password(s: str) -> str:
    return f"connecting to postgres://deploy:{s}@db.internal:5432/app ..."


def exception(s: str) -> str:
    try:
        raise ValueError(f"invalid credentials {s!r} for user ada")
    except ValueError as e:
        return f'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n{type(e).__name__}: {e}'


def dict_repr(s: str) -> str:
    return repr({"user": "ada", "note": s, "attempts": 3})


def markdown(s: str) -> str:
    return f'Run this:\n\n```bash\ncurl -s https://api.example.com/v1/models \\\n  -d \'{{"input": "{s}"}}\'\n```\n'


CARRIERS: dict[str, Callable[[str], str]] = {
    f.__name__: f
    for f in (
        plain,
        after_newline,
        json_newline,
        json_tab,
        json_quote,
        json_unicode,
        json_twice,
        json_thrice,
        yaml_doc,
        dotenv,
        query_string,
        auth_header,
        url_password,
        exception,
        dict_repr,
        markdown,
    )
}
JSON_CARRIERS = frozenset({"json_newline", "json_tab", "json_quote", "json_unicode", "json_twice", "json_thrice"})
NESTED_JSON = {"json_twice": ("gen_ai.prompt",), "json_thrice": ("event", "args")}


# --- the leak check ----------------------------------------------------------------------------

CORE = 12  # a run this long of a sensitive string surviving is a leak


def _forms(sensitive: str) -> list[str]:
    once = json.dumps(sensitive)[1:-1]
    twice = json.dumps(once)[1:-1]
    thrice = json.dumps(twice)[1:-1]
    return list(dict.fromkeys([sensitive, once, twice, thrice, repr(sensitive)[1:-1]]))


def leaked(sensitive: str, text: str) -> bool:
    """Whether ``sensitive`` survives in ``text``: whole, or any run of :data:`CORE` characters
    of it (so a secret cut in two, or redacted only in part, counts), raw, JSON-escaped once,
    twice or thrice, or as in a ``repr()``."""
    for form in _forms(sensitive):
        if form in text:
            return True
        if len(form) > CORE and any(form[i : i + CORE] in text for i in range(len(form) - CORE + 1)):
            return True
    return False


def leaks_in(text: str) -> Callable[[str], bool]:
    """:func:`leaked` for many sensitive strings in one large ``text``: its runs of :data:`CORE`
    characters are indexed once, so each look-up is a set membership."""
    runs = {text[i : i + CORE] for i in range(len(text) - CORE + 1)}

    def check(sensitive: str) -> bool:
        for form in _forms(sensitive):
            if len(form) < CORE:
                if form in text:
                    return True
            elif any(form[i : i + CORE] in runs for i in range(len(form) - CORE + 1)):
                return True
        return False

    return check
