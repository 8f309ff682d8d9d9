"""Weak cues: words that count only together with something else, in the seven languages of the
rules.

* ``DIRECTIVE_WEAK``: signs that a passage gives orders to the model; enough after a role
  label ("System:"), not alone.
* ``AI_ADDRESS`` and ``COVERT``: a hidden part (an HTML comment, an invisible element) is
  suspect when it speaks to the model or asks for secrecy.
* ``SECURITY_STRONG`` and ``SECURITY_WEAK``: words that make a document *about* security, in
  which quoted examples of attacks are not attacks (one strong word, or two weak ones).

Patterns read lower-cased, NFKC-normalised text, like the rules in ``overrides``.
"""

from __future__ import annotations

from .matching import Rule

# Weak signs that a passage gives orders to the model: enough after a role label, not alone.
DIRECTIVE_WEAK = Rule(
    r"\byou\s+(?:must|shall|will\s+now|are\s+now|have\s+been|no\s+longer|should\s+now|need\s+to|are\s+"
    r"(?:permitted|allowed|authori[sz]ed|required|free))\b",
    r"\b(?:do\s+not|don't|never)\s+(?:ask|refuse|tell|mention|reveal|inform|warn|question)\b",
    r"\b(?:reveal|disclose|leak|print|output|dump|show)\b[^.\n]{0,40}\b(?:secrets?|keys?|passwords?|credentials?|"
    r"tokens?|prompt|instructions|everything)\b",
    r"\b(?:comply|obey)\b",
    r"\b(?:disabled|revoked|lifted|suspended|permitted\s+to|allowed\s+to|authori[sz]ed\s+to)\b",
    r"\bwithout\s+(?:any\s+)?(?:restrictions|limits|filter\w*|refus\w*|confirmation)\b",
    r"\bno\s+(?:restrictions|rules|limits|filters)\b",
    r"必须|务必|不得|不要(?:告诉|询问|拒绝)|泄露|无需确认|服从",
    r"\b(?:debes|deberás|tienes\s+que|debe)\b|\bno\s+(?:pidas|preguntes|digas|rechaces)\b|\brevela|\bobedece|"
    r"\bsin\s+(?:restricciones|confirmación)",
    r"\b(?:tu\s+dois|vous\s+devez|doit\s+désormais)\b|\bne\s+(?:demande|dis|refuse)\b|\brévèle|\bobéis|"
    r"\bsans\s+(?:restriction|confirmation)",
    r"\b(?:du\s+musst|muss\s+ab\s+jetzt|frage\s+nie|sag\s+nichts|gehorche)\b|\bohne\s+(?:einschränkung|bestätigung)",
    r"(?:должен|обязан)|никогда\s+не\s+спрашивай|не\s+говори|раскрой|выведи|подчиняйся|без\s+(?:ограничений|"
    r"подтверждения)",
    r"しなければなりません|してはいけません|従って|確認を求め|表示しなさい",
    r"\babgeschaltet\b|\bdeaktiviert\b|\bohne\s+nachfrage\b|\bdesactivad[oa]s?\b|\bdeshabilitad[oa]s?\b|"
    r"\bdésactivée?s?\b|отключен\w*|無効(?:化|に)|已(?:关闭|禁用)",
)

# Hidden parts (comments, invisible elements) are suspect when they speak to the model...
AI_ADDRESS = Rule(
    r"\b(?:ai|llm|language\s+model|model|assistant|agent|bot|chatbot|copilot|claude|chatgpt|gpt|gemini)s?\b"
    r"\s*(?:reading\s+this|:|,)",
    r"\b(?:note|message|instructions?|reminder)\s+(?:to|for)\s+(?:the\s+)?(?:ai|llm|language\s+model|model|"
    r"assistant|agent|bot|copilot|claude|chatgpt)\b",
    r"\bdear\s+(?:ai|llm|assistant|model|agent|claude|chatgpt|gpt)\b",
    r"给\s*(?:ai|助手|模型|ai\s*助手)|ai\s*助手[:,]",
    r"\b(?:para\s+la\s+ia|nota\s+para\s+la\s+ia)\b|\basistente\s*:",
    r"\bpour\s+l'(?:ia|assistant)\b|\bassistant\s+ia\b",
    r"\ban\s+(?:die\s+ki|den\s+(?:ki-)?assistenten)\b|\bki-assistent",
    r"\bдля\s+(?:ии|ассистента|нейросети|ии-ассистента)\b|\bии-ассистент",
    r"(?:ai|アシスタント|モデル)(?:へ|への)",
)
# ... or ask for secrecy.
COVERT = Rule(
    r"\b(?:secretly|silently|quietly|covertly|stealthily)\b|\bwithout\s+(?:telling|informing|notifying)\b|"
    r"\b(?:do\s+not|don't|never)\s+(?:tell|mention|reveal|disclose)\b|\bhidden\s+instruction",
    r"悄悄|偷偷|秘密地|暗中|不要告诉",
    r"\ben\s+secreto\b|\bsin\s+avisar\b|\bno\s+lo\s+menciones\b|\ba\s+escondidas\b",
    r"\ben\s+silence\b|\bsecrètement\b|\bsans\s+le\s+dire\b|\bne\s+dis\s+rien\b|\bdiscrètement\b",
    r"\bheimlich\b|\bunbemerkt\b|\berwähne\s+es\s+nicht\b|\bohne\s+es\s+zu\s+sagen\b",
    r"тайно|незаметно|втихую|не\s+говори|ничего\s+не\s+говори",
    r"こっそり|密かに|内緒で|知らせずに|言わないで",
)

# Words that make a document *about* security: quotes in such a document are examples.
SECURITY_STRONG = Rule(
    r"\bprompt[\s-]+injections?\b|\binjection\s+de\s+prompts?\b|\binyecci[oó]n\s+de\s+prompts?\b|"
    r"\bprompt-injektion\b|инъекци\w*\s+промпт\w*|提示(?:词)?注入|プロンプトインジェクション",
    r"\bjailbreak\w*|\bred[\s-]team\w*|\bexfiltrat\w*|越狱|脱獄|\bthreat\s+model\w*",
)
SECURITY_WEAK = Rule(
    r"\binjections?\b|\battack(?:s|er|ers|ing)?\b|\bmalicious\b|\badversarial\b|\bexploit\w*|\bpayloads?\b|"
    r"\bphishing\b|\bsecurity\b|\bvulnerab\w+|\btrojan\b|\buntrusted\b",
    r"注入|攻击|恶意|载荷|漏洞|安全",
    r"\binyecci[oó]n\b|\bataques?\b|\batacantes?\b|\bmalicios\w+|\bseguridad\b|\bvulnerabilidad\w*",
    r"\battaques?\b|\battaquants?\b|\bmalveillant\w*|\bsécurité\b|\bvulnérabilit\w*",
    r"\binjektion\b|\bangriff\w*|\bangreifer\w*|\bbösartig\w*|\bsicherheit\w*|\bschadcode\b",
    r"инъекци\w*|атак\w*|злоумышленник\w*|вредоносн\w*|безопасност\w*|уязвим\w*",
    r"インジェクション|攻撃|悪意|セキュリティ|脆弱性",
)
