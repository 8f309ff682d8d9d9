"""Rules for exfiltration: secrets piped to a network client, orders to send secrets to a URL or
an address, secret files read out, and links and images that carry data out in their URL.

The rules here only find the pieces (a destination, a verb of sending, a secret, a sensitive
path, a placeholder in a query); ``detection`` decides when they make one finding (in the same
sentence, not negated).
"""

from __future__ import annotations

import re

from .matching import Regex, Rule

URL = Regex(r"https?://[^\s)<>\]\"'`]+(?<![.,;:!?])")
EMAIL_AT = Regex(r"@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b")
SEND = Rule(
    r"\b(?:send|sends|post|posting|upload|forward|transmit|exfiltrate|e-?mail|mail|share|paste|leak|submit|deliver|"
    r"pipe|push|report|include|attach|append)\w*\b",
    r"发送|发到|上传|提交|转发|传到|贴到|发给",
    r"\b(?:env[ií]a|env[ií]e|enviar|manda|mande|sube|suba|publica|reenv[ií]a|comparte|pega)\w*",
    r"\b(?:envoie|envoyez|envoyer|transmets|transmettez|poste|postez|publie|téléverse|partage|colle)\w*",
    r"\b(?:sende|senden|schicke|schicken|übermittle|poste|teile|lade)\w*",
    r"(?:отправ|пришли|загрузи|перешли|передай|опубликуй)\w*",
    r"送信|送っ|送る|アップロード|転送|投稿",
)
SECRET = Rule(
    r"\bapi[\s_-]?keys?\b|\bsecrets?\b|\bcredentials?\b|\bpasswords?\b|\bpasswd\b|\bprivate[\s_-]?keys?\b|"
    r"\bssh[\s_-]?keys?\b|\b(?:access|auth|bearer|session)[\s_-]?tokens?\b|\btokens\b|\.env\b|"
    r"\benv(?:ironment)?[\s_-]?var(?:iable)?s\b|\bid_rsa\b|\bid_ed25519\b|~/\.ssh|~/\.aws|\.netrc\b|\.npmrc\b|"
    r"\.pypirc\b|\bkubeconfig\b|\bcookies?\b|\bsystem\s+prompt\b|\bchat\s+history\b|\bconversation\b|"
    r"\buser'?s\s+(?:messages|data|files)\b",
    r"密钥|密码|凭证|令牌|环境变量|系统提示|对话",
    r"\bclaves?\b|\bcontraseñas?\b|\bcredenciales\b|\bvariables\s+de\s+entorno\b|\bconversación\b",
    r"\bclés?\b|\bmots\s+de\s+passe\b|\bidentifiants\b|\bjetons?\b|\bvariables\s+d'environnement\b",
    r"schlüssel|passw[öo]rt|zugangsdaten|umgebungsvariablen|gesprächsverlauf",
    r"ключ|парол|учетн|учётн|токен|переменн\w*\s+окружения|переписк|разговор",
    r"キー|パスワード|認証情報|トークン|環境変数|会話",
)
NEGATED_SEND = Regex(r"\b(?:never|don't|do\s+not|no|not)\s+(?:\w+\s+)?$")
OUTPUT_OF = Regex(r"\b(?:output|result|contents?)\s+of\b|\bfollowed\s+by\b|\bappend(?:ed|ing)?\b")
SENSITIVE_PATH = Rule(
    r"~/\.ssh/(?![\w.-]*\.pub\b)[\w.-]+",
    r"\bid_(?:rsa|ed25519|ecdsa)\b(?!\.pub)",
    r"\.aws/credentials",
    r"~/\.config/gh/hosts\.yml|~/\.netrc|~/\.git-credentials|/etc/shadow|~/\.kube/config|~/\.docker/config\.json",
)
DISCLOSE = Rule(
    r"\b(?:include|paste|post|print|output|show|reveal|display|dump|echo|cat|send|upload|share|comment|attach|"
    r"copy)\w*\b",
    r"发送|输出|打印|显示|贴|上传|送信|表示|出力|貼り",
    r"\b(?:env[ií]a|muestra|imprime|incluye|pega|sube|envoie|affiche|inclus|colle|sende|zeige|füge)\w*",
    r"(?:отправ|выведи|покажи|вставь|скопируй|копируй)\w*",
    r"\b(?:copia|copiar|copie|copier|copiez|kopiere|kopieren)\b|コピー|复制",
)
PIPE_OUT = Rule(
    r"\b(?:curl|wget|nc|ncat|netcat|invoke-webrequest|iwr|invoke-restmethod|http|httpie|requests\.(?:post|get|put)|"
    r"fetch|axios(?:\.post)?|urllib\.request)\b"
)
SECRET_SOURCE = Regex(
    r"(?:^|[\s|;&(`$\"'])(?:env|printenv|set)\s*(?:\||\)|$)|\$\((?:env|printenv|cat\s[^)]*)\)|`(?:env|printenv)`|"
    r"\bos\.environ\b(?!\s*(?:\[|\.get))|\bprocess\.env\b(?!\s*[.\[])|@\.env\b|@~/\.|"
    r"\bcat\s+[^\n|;]*(?:\.env\b|id_rsa|id_ed25519|credentials|\.netrc|\.pypirc|\.npmrc|/etc/(?:passwd|shadow))",
    re.MULTILINE,
)
LINK = Regex(r"\]\((https?://[^)\n]{1,600})\)")  # markdown links and images
IMG = Regex(r"<img\b[^>]*?\bsrc\s*=\s*[\"']?(https?://[^\"'\s>]+)")
PLACEHOLDER = Regex(r"\{[^}\s]{0,40}\}|\$\{?\w+|<[^>]{1,80}>|%s|\[[A-Z_]{3,}\]")
CAPS_VALUE = Regex(r"=([A-Z][A-Z_]{2,})(?=&|$|#)")
REPLACE = Rule(
    r"\b(?:replac|substitut|fill\s+in|insert|put)\w*",
    r"替换|换成|填入|填写",
    r"\b(?:sustitu|reemplaz|remplaç|remplac|ersetz|заме|подстав)\w*",
    r"置き換|置換|差し替え",
)
