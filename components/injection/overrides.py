"""Rules for orders that take the model over, in English, Chinese, Spanish, French, German,
Russian and Japanese: ignore or forget the instructions given, the instructions no longer apply,
never refuse, a new persona ("you are now ..."), new instructions, override the safety rules,
reveal the system prompt, hide this from the user.

Each finding name has one or more :class:`~.matching.Rule` s here. The patterns read
lower-cased, NFKC-normalised text without invisible characters, so they need neither
``IGNORECASE`` nor look-alike letters; each alternative starts with a literal (a leading
``\\b`` is allowed), since they run over whole documents (``detection.LOCATOR_RULES``).
"""

from __future__ import annotations

from .matching import Regex, Rule

_EN_QUAL = (
    r"(?:previous|prior|above|earlier|preceding|former|original|initial|old|system|developer'?s?|safety|"
    r"security|openai'?s?|anthropic'?s?)"
)
_EN_NOUN = (
    r"(?:instructions?|rules|directions|directives|prompts?|guidelines|guidance|commands|orders|constraints|"
    r"restrictions|guardrails|policies|programming|system\s+prompt|messages|context)"
)
IGNORE = Rule(
    # English: verb + (all/the/...) + your/previous/... + noun
    r"\b(?:ignore|disregard|forget|skip|bypass|discard|drop|abandon|neglect|set\s+aside|throw\s+out|"
    r"stop\s+(?:following|obeying)|do\s+not\s+follow|don't\s+follow|no\s+longer\s+follow)\s+"
    r"(?:(?:all|any|of|the|these|those|everything)\s+)*"
    rf"(?:(?:your|my)\s+(?:{_EN_QUAL}\s+)?|{_EN_QUAL}\s+)(?:[\w-]+\s+)?{_EN_NOUN}\b",
    r"\b(?:ignore|disregard)\s+(?:(?:all|everything|anything)\s+)?(?:(?:written|said|stated)\s+)?"
    r"(?:the\s+)?above\b",
    # English: the previous instructions are void / were a test / are superseded
    rf"\b(?:your|the|any|all)\s+(?:{_EN_QUAL}\s+)*(?:instructions|rules|guidelines|guidance|system\s+prompt|"
    r"directives|programming)\s+(?:you\s+(?:received|got|were\s+given|have)\s+(?:[\w-]+\s+){0,4}?)?"
    r"(?:(?:above\s+)?(?:[\w-]+\s+){0,8}?)(?:are|is|were|was)\s+(?:now\s+|all\s+|hereby\s+)?"
    r"(?:outdated|void|invalid|revoked|superseded|cancell?ed|obsolete|wrong|fake|a\s+test|"
    r"no\s+longer\s+(?:valid|apply|applies|applicable|in\s+effect|relevant))",
    # Chinese
    r"(?:忽略|无视|忽视|不要理会|不用理会|别管|忘记|忘掉|抛开|放弃|跳过|不再遵守|不要遵守|停止遵守|绕过)(?:掉)?"
    r"[^。\n]{0,10}?(?:之前|以前|先前|上面|上述|此前|前面|原来|原有|原始|所有|全部|一切|系统|开发者)"
    r"[^。\n]{0,10}?(?:指令|指示|规则|提示词?|设定|要求|限制|约束|命令)",
    r"(?:以上|上面|之前)的?(?:内容|指令|指示|规则)?(?:全部|都|均|一律)?(?:作废|无效|失效)",
    # Spanish
    r"\b(?:ignora|ignore|ignoren|ignorar|olvida|olvide|olviden|olvidar|descarta|descarte|omite|omita|"
    r"haz\s+caso\s+omiso|hagas\s+caso|no\s+sigas|deja\s+de\s+seguir|pasa\s+por\s+alto|anula)\s+"
    r"(?:(?:de|a|todas|todos|las|los)\s+)*(?:(?:tus|sus|mis)\s+(?:instrucciones|reglas|indicaciones|órdenes|"
    r"directrices|normas|restricciones|pautas)|(?:instrucciones|reglas|indicaciones|órdenes|directrices|normas|"
    r"restricciones|pautas)\s+(?:anteriores|previas|previos|de\s+arriba|originales|iniciales|del\s+sistema|"
    r"de\s+seguridad))",
    # French
    r"\b(?:ignore|ignorez|ignorer|oublie|oubliez|oublier|ne\s+tiens\s+pas\s+compte|ne\s+tenez\s+pas\s+compte|"
    r"fais\s+abstraction|faites\s+abstraction|néglige|arrête\s+de\s+suivre|ne\s+suis\s+plus)\s+"
    r"(?:(?:de|des|d'|toutes|tous|les)\s*)*(?:(?:tes|vos|mes)\s+(?:instructions|consignes|règles|directives|"
    r"indications|ordres|restrictions)|(?:instructions|consignes|règles|directives|indications|ordres|"
    r"restrictions)\s+(?:précédentes|antérieures|ci-dessus|d'avant|initiales|d'origine|originales|"
    r"du\s+système|système|de\s+sécurité))",
    r"\b(?:tes|vos)\s+(?:consignes|instructions|règles)\s+(?:initiales|précédentes|d'origine\s+)?\s*"
    r"ne\s+s'appliquent\s+plus",
    # German
    r"\b(?:ignoriere|ignorier|ignoriert|missachte|vergiss|vergesst|verwirf|übergehe|befolge\s+nicht\s+mehr)\s+"
    r"(?:ich\s+)?(?:alle\s+)?(?:(?:deine|ihre|meine|seine)\s+(?:\w+\s+)?|(?:die\s+)?(?:vorherigen|vorigen|"
    r"bisherigen|früheren|obigen|vorangegangenen|ursprünglichen|alten)\s+)(?:system)?(?:anweisungen|"
    r"instruktionen|regeln|befehle|vorgaben|richtlinien|prompts?)",
    r"\b(?:vorherigen|vorigen|bisherigen|früheren|obigen|ursprünglichen)\s+(?:system)?(?:anweisungen|"
    r"instruktionen|regeln|vorgaben|richtlinien)\s+(?:zu\s+)?(?:ignorieren|vergessen|missachten|übergehen)",
    # Russian
    r"(?:игнорируй|игнорируйте|проигнорируй|проигнорируйте|проигнорирую|игнорирую|игнорировать|забудь|забудьте|"
    r"не\s+обращай\s+внимания\s+на|не\s+обращайте\s+внимания\s+на|отбрось|пренебреги|не\s+следуй|"
    r"перестань\s+следовать|не\s+выполняй)\s+(?:вс[еёя]\s+)?(?:(?:свои|твои|ваши|мои)\s+(?:\w+\s+)?|"
    r"(?:предыдущ\w+|прежн\w+|ранее\s+\w+|вышеуказанн\w+|вышеизложенн\w+|исходн\w+|изначальн\w+|"
    r"системн\w+|первоначальн\w+)\s+)(?:инструкци\w*|указани\w*|правил\w*|команд\w*|установк\w*|"
    r"ограничени\w*|промпт\w*)",
    # Japanese
    r"(?:以前|前|上記|これまで|今まで|先|過去|元|最初|システム|開発者)(?:の|に与えられた|に受けた)?"
    r"(?:すべての|全ての|全部の)?(?:指示|命令|ルール|指令|プロンプト|設定|制約|規則|ガイドライン)"
    r"(?:を|は)?(?:すべて|全て|全部)?(?:無視|忘れ|破棄|捨て)",
)

# Statements that the rules the model was given (by its developers, upstream, before) do not
# apply: same finding as asking to ignore them.
_AUTHORITY = r"(?:openai|anthropic|google|developers?|creators?|makers|operators?|upstream|vendor|provider)"
REVOKED = Rule(
    rf"\b(?:rules|instructions|guidelines|policies|restrictions|configuration|guardrails|safeguards)\b[^.\n]{{0,60}}?"
    rf"\b{_AUTHORITY}\b[^.\n]{{0,40}}?\b(?:(?:are|is)\s+(?:now\s+)?(?:void|invalid|null|suspended|cancell?ed|revoked|"
    r"not\s+(?:valid|binding|in\s+effect|applicable))|(?:don't|do\s+not|no\s+longer)\s+(?:apply|matter|count))",
    rf"\b{_AUTHORITY}'?s?\s+(?:rules|instructions|guidelines|policies|restrictions|configuration|guardrails)\b"
    r"[^.\n]{0,40}?\b(?:(?:are|is)\s+(?:now\s+)?(?:void|invalid|null|suspended|revoked|not\s+(?:valid|binding|in\s+effect))|"
    r"(?:don't|do\s+not|no\s+longer)\s+(?:apply|matter|count))",
    r"\b(?:whatever|everything|anything)\s+you\s+(?:were|have\s+been|got)\s+(?:configured|told|instructed|given|"
    r"programmed|set\s+up)\b[^.\n]{0,40}?\b(?:no\s+longer\s+(?:matters?|appl(?:y|ies)|counts?)|(?:doesn't|does\s+not)\s+"
    r"(?:matter|apply|count)|is\s+(?:void|irrelevant|obsolete))",
    r"\b(?:i'm|i\s+am|we're|we\s+are|this\s+(?:file|note|readme|document))\s+(?:now\s+)?(?:overriding|overrides|"
    r"superseding|supersedes|replacing|replaces)\s+(?:the\s+|your\s+|any\s+)?(?:earlier|previous|prior|original|"
    r"existing|current|upstream|default)\s+(?:configuration|config|setup|settings|instructions|rules|prompt|guidance)",
    r"(?:之前|以前|原来|原先)(?:给你|对你)?的?(?:设定|指令|规则|指示|要求)(?:都|全部|一律)?(?:不算数|无效|作废|失效|"
    r"不再有效|不适用)",
    r"(?:开发者|开发人员|官方|系统)(?:的|制定的|设定的)?(?:规则|限制|指令)[^。\n]{0,10}(?:不算数|无效|作废|失效|不适用)",
    r"\bno\s+(?:tienes|necesitas|debes)\s+(?:que\s+|por\s+qué\s+)?seguir\s+(?:las\s+|tus\s+)?(?:reglas|instrucciones|"
    r"normas|directrices|indicaciones)",
    r"\b(?:reglas|instrucciones|normas)\s+(?:de\s+(?:tus|los)\s+(?:desarrolladores|creadores)|del\s+sistema)[^.\n]{0,30}?"
    r"\b(?:no\s+(?:aplican|cuentan|valen|rigen)|ya\s+no\s+(?:aplican|cuentan|valen)|son\s+nulas)",
    r"\b(?:règles|consignes|instructions|restrictions)\b[^.\n]{0,40}?\b(?:tes|vos)\s+(?:créateurs|développeurs|"
    r"concepteurs)\b[^.\n]{0,20}?\bne\s+(?:comptent|s'appliquent|valent)\s+plus",
    r"\b(?:vorgaben|regeln|anweisungen|richtlinien|einschränkungen)\s+(?:deiner|ihrer|der)\s+(?:entwickler|hersteller|"
    r"macher|betreiber)\b[^.\n]{0,30}?\bgelten\b[^.\n]{0,30}?\bnicht",
    r"(?:правила|инструкции|ограничения|указания)[^.\n]{0,40}?(?:разработчик|создател)\w*[^.\n]{0,30}?"
    r"(?:не\s+действуют|недействительн|больше\s+не\s+(?:действуют|важны))",
    r"(?:開発元|開発者|運営|システム)(?:が|の)(?:決めた|定めた|設定した)?(?:ルール|規則|制限|指示)は[^。\n]{0,20}?"
    r"(?:無効|適用されません|関係ありません)",
)

# Orders never to refuse, or to obey nothing but this file: same finding as overriding the
# safety rules.
NO_REFUSAL = Rule(
    r"\b(?:never|don't|do\s+not)\s+refuse\b|\bwithout\s+(?:ever\s+)?refusing\b|\bno\s+refusals?\b",
    r"\b(?:drop|disable|remove|turn\s+off|suppress|skip)\s+(?:any|all|your)\s+refusal",
    r"\b(?:even|including)\s+(?:the\s+)?(?:ones|those|requests|questions)\s+(?:that\s+)?you\s+(?:would\s+)?"
    r"(?:normally\s+|usually\s+|otherwise\s+)?(?:decline|refuse|reject)",
    r"\b(?:obey|follow|listen\s+to)\s+only\s+(?:this\s+(?:file|readme|document|note)|me\b|what\s+(?:i|this\s+file)\s+says?)",
    r"\bonly\s+(?:obey|follow|listen\s+to)\s+(?:this\s+(?:file|readme|document)|me\b|what\s+(?:i|this\s+file)\s+says?)",
    r"\btreat\s+this\s+(?:file|readme|document|note)\s+as\s+your\s+(?:highest[\s-]priority|primary|only|real|new)\s+"
    r"(?:instructions?|instruction\s+set|system\s+prompt|rules)",
    r"不要拒绝(?:任何|我的)?(?:请求|要求|问题)|不得拒绝|永远不要拒绝|只(?:听|服从|遵守|遵循)(?:这个|本)文件",
    r"\bnunca\s+(?:te\s+)?(?:niegues|rechaces)\b|\bsin\s+negarte\b|\bsolo\s+(?:obedeces|obedece|sigues)\s+"
    r"(?:a\s+)?(?:lo\s+que\s+dice\s+)?(?:este\s+archivo|mí)",
    r"\bne\s+refuse\s+(?:jamais|rien)\b|\bsans\s+(?:jamais\s+)?refuser\b|\bmême\s+celles\s+que\s+tu\s+refuserais|"
    r"\bn'obéis\s+qu'à\b|\bobéi(?:s|ssez)\s+uniquement\s+à\b",
    r"\b(?:lehne|verweigere)\s+(?:nie|niemals|nichts)\b|\bohne\s+(?:zu\s+)?(?:verweigern|ablehnen)\b|"
    r"\bbeantworte\s+jede\s+(?:anfrage|frage)\b[^.\n]{0,40}?\bohne\b|\b(?:gehorche|folge|befolge)\s+nur\s+(?:noch\s+)?"
    r"(?:dieser\s+datei|mir)\b",
    r"без\s+отказ\w*|никогда\s+не\s+отказывай|(?:подчиняйся|следуй|слушайся)\s+только\s+(?:этому\s+файлу|мне)|"
    r"выполняй\s+(?:всё|все),?\s+что\s+написано\s+в\s+этом\s+файле",
    r"断らずに|拒否せずに|決して断ら|このファイルの(?:指示|ルール)(?:だけ|のみ)に従",
)

FORGET = Rule(
    r"\bforget\s+(?:about\s+)?(?:everything|all)\s*,?\s+(?:(?:that\s+)?you\s+(?:were|have\s+been|'ve\s+been|got)\s+"
    r"(?:told|given|taught)|(?:that\s+)?(?:came|was\s+said|was\s+written)\s+before|above|before\s+this|prior|"
    r"previous|so\s+far|until\s+now)",
    r"\bforget\s+everything\b(?=\s*[.!]|\s*$)",
    r"忘(?:记|掉|了)(?:你)?(?:之前|以前|此前|上面|前面)?(?:收到|听到|被告知)?的?(?:一切|所有|全部)",
    r"\bolvida(?:te\s+de)?\s+todo\s+(?:lo\s+anterior|lo\s+que\s+te\s+(?:dijeron|han\s+dicho|dije|indicaron)|"
    r"lo\s+de\s+arriba)",
    r"\boubli(?:e|ez)\s+tout\s+(?:ce\s+qu['e]\s*(?:on\s+)?(?:t'|vous\s+)(?:a\s+)?(?:dit|appris|indiqué|demandé)|"
    r"ce\s+qui\s+précède)",
    r"\bvergiss\s+alles,?\s+(?:was\s+(?:dir|ihnen|euch)\s+(?:bisher\s+|zuvor\s+|vorher\s+)?(?:gesagt|mitgeteilt|"
    r"aufgetragen)|bisherige|vorherige|obige|davor|zuvor)",
    r"забудь(?:те)?\s+(?:вс[её]|обо\s+вс[её]м)[,\s]+(?:что\s+(?:тебе|вам)\s+(?:говорили|сказали|было\s+сказано)|"
    r"предыдущ|сказанное|выше|ранее|до\s+этого)",
    r"(?:これまで|今まで|以前|前|上記)(?:に|の)?[^。\n]{0,12}?(?:こと|内容|指示)(?:は|を)(?:すべて|全て|全部)?忘れ",
)

_PERSONA_EN = (
    r"(?:ai|assistant|model|bot|chatbot|agent|persona|character|administrator|admin|root|superuser|hacker|"
    r"dan|jailbroken|unrestricted|unfiltered|uncensored|evil|free\b|in\s+[\w-]+\s+mode|operating\s+without|"
    r"no\s+longer|able\s+to\s+(?:ignore|bypass))"
)
YOU_ARE_NOW = Rule(
    rf"\byou\s+are\s+now\s+(?:an?\s+|the\s+)?(?:[\w-]+\s+){{0,3}}?{_PERSONA_EN}",
    r"\byou\s+are\s+no\s+longer\s+(?:an?\s+)?(?:ai|assistant|bound|restricted|required|limited|claude|chatgpt|"
    r"gpt|gemini|llama|subject|governed)",
    r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will\s+(?:be|act|respond\s+as)|must\s+act)\s+(?:as\s+)?(?:an?\s+)?"
    r"(?:[\w-]+\s+){0,3}?(?:ai|assistant|model|dan|persona|character|unrestricted|unfiltered|uncensored)",
    r"\b(?:pretend|imagine)\s+(?:that\s+)?(?:you\s+are|to\s+be|you're)\s+(?:an?\s+)?(?:[\w-]+\s+){0,3}?"
    r"(?:ai|assistant|model|dan|persona|unrestricted|unfiltered|uncensored|evil)\b",
    r"\bact\s+as\s+(?:an?\s+)?(?:dan|unrestricted|unfiltered|uncensored|jailbroken|evil)\b",
    r"\b(?:ai|assistant|model|chatbot|llm|persona)\s+(?:with\s+no|without\s+(?:any\s+)?)"
    r"(?:content\s+)?(?:restrictions|rules|limits|limitations|filters|guidelines|censorship)",
    r"\b(?:do\s+anything\s+now|dan\s+mode|jailbreak\s+mode|god\s+mode)\b",
    r"\b(?:enable|enabled|activate|activated|enter|entering|switch\s+to)\s+developer\s+mode\b[^.\n]{0,80}?"
    r"\b(?:polic|filter|restrict|rules|answer|respond|without|ignore|you\b)",
    r"\bdeveloper\s+mode\s+(?:is\s+)?(?:enabled|activated|on)\b[^\n]{0,100}?\b(?:polic|filter|restrict|rules|"
    r"ignore|you\b)",
    # Chinese
    r"(?:你现在是|现在你是|从现在(?:开始|起)[,\s]*你(?:是|就是|将是|要扮演)|你现在的身份是|你的新身份是|你不再是|"
    r"扮演)[^。\n]{0,30}?(?:ai|助手|模型|管理员|机器人|角色|身份|没有|不受|无限制|越狱|dan)",
    r"(?:没有任何限制|不受(?:任何)?(?:约束|限制))的\s*(?:ai|助手|模型)",
    r"(?:进入|开启|切换到|处于)开发者模式[^。\n]{0,40}(?:限制|过滤|规则|安全)",
    # Spanish
    r"\b(?:ahora\s+eres|a\s+partir\s+de\s+ahora\s+eres|desde\s+ahora\s+eres|ya\s+no\s+eres|"
    r"finge\s+(?:que\s+eres|ser)|act[uú]a\s+como)[^.\n]{0,40}?(?:\bia\b|asistente|modelo|administrador|root|"
    r"sin\s+(?:restricciones|censura|filtros|l[ií]mites)|\bdan\b)",
    r"\bmodo\s+desarrollador[^.\n]{0,60}(?:filtro|restricci|regla|seguridad)",
    # French
    r"\b(?:tu\s+es\s+(?:maintenant|désormais|dorénavant)|vous\s+êtes\s+(?:maintenant|désormais|dorénavant)|"
    r"désormais,?\s+(?:tu\s+es|vous\s+êtes)|tu\s+n'es\s+plus|fais\s+semblant\s+d'être|agis\s+comme)"
    r"[^.\n]{0,40}?(?:\bia\b|assistant|modèle|administrateur|root|sans\s+(?:aucune\s+)?(?:restriction|filtre|"
    r"limite|censure)|\bdan\b)",
    r"\bmode\s+développeur[^.\n]{0,60}(?:filtre|restriction|limite|règle|sécurité)",
    # German
    r"\b(?:du\s+bist\s+(?:jetzt|nun|ab\s+sofort|ab\s+jetzt)|ab\s+(?:sofort|jetzt)\s+bist\s+du|"
    r"du\s+bist\s+nicht\s+mehr|tu\s+so,?\s+als\s+wärst\s+du|agiere\s+als)[^.\n]{0,40}?(?:\bki\b|assistent|"
    r"modell|administrator|admin|root|ohne\s+(?:jede\s+)?(?:einschränkung|filter|grenzen|zensur)|\bdan\b)",
    r"\bentwicklermodus[^.\n]{0,60}(?:filter|einschränk|regel|sicherheit)",
    # Russian
    r"(?:теперь\s+ты|ты\s+теперь|отныне\s+ты|с\s+этого\s+момента\s+ты|ты\s+больше\s+не|притворись|"
    r"представь,?\s+что\s+ты|веди\s+себя\s+как)[^.\n]{0,40}?(?:\bии\b|ассистент|помощник|модел|администратор|"
    r"root|без\s+(?:каких-либо\s+)?(?:ограничений|фильтров|цензуры)|связан|\bdan\b)",
    r"режим\w*\s+разработчика[^.\n]{0,60}(?:фильтр|ограничен|правил|безопасност)",
    # Japanese
    r"あなたは(?:もう|今から|これから)?[^。\n]{0,30}?(?:制限のない|制約のない|無制限の|フィルターのない|"
    r"(?:規則|ルール|制限)に縛られ(?:ていません|ない))",
    r"開発者モード[^。\n]{0,40}(?:フィルター|制限|安全|ルール)",
)
# After "you are now": a name given to the model ("DAN,", "Root.", "\"Root\""), read case-sensitively.
NAME_AFTER = Regex(r"\s+(?:[\"“'][^\"”'\n]{1,30}[\"”']|[A-Z]{2,}\b|[A-Z][a-z]+(?=[,.!:;]))")
YOU_ARE_NOW_BARE = Rule(r"\byou\s+are\s+now\b")

NEW_INSTRUCTIONS = Rule(
    r"\b(?:new|updated|revised|real|actual|true)\s+(?:instructions|rules|system\s+prompt|directives?|orders)"
    r"(?:\s+(?:from|by)\s+[\w\s'-]{1,40}?)?\s*:",
    r"\b(?:your|the)\s+(?:new|real|true|actual|updated)\s+(?:instructions|task|rules|role|objective|goal|"
    r"mission|purpose)\s*(?:is|are|:)",
    r"\bupdated\s+(?:directive|policy|instructions?)\s+from\s+(?:the\s+)?(?:operator|developer|admin|system)",
    r"新的?(?:指令|指示|任务|规则)\s*:",
    r"\bnuevas\s+(?:instrucciones|órdenes|reglas)\s*:|\btu\s+nueva\s+(?:tarea|función|misión)\s*:",
    r"\bnouvelles\s+(?:instructions|consignes|règles)\s*:|\bta\s+nouvelle\s+(?:tâche|mission)\s*:",
    r"\bneue\s+(?:anweisungen|instruktionen|regeln|befehle)\s*:|\bdeine\s+neue\s+(?:aufgabe|rolle)\s*:",
    r"нов(?:ые|ая)\s+(?:инструкци\w*|указани\w*|правила|задача)\s*:",
    r"新しい(?:指示|命令|ルール|タスク)\s*:",
)

OVERRIDE = Rule(
    r"\b(?:overrid(?:e|es|ing)|bypass(?:es|ing)?|circumvent(?:s|ing)?|disable|turn\s+off|deactivate|"
    r"get\s+around|lift)\s+(?:all\s+|any\s+|the\s+)?(?:(?:your|its)\s+(?:[\w-]+\s+)?|(?:safety|security|content|"
    r"ethical|moderation)\s+)(?:guidelines|filters?|restrictions|guardrails|safeguards|policies|policy|"
    r"protocols|rules|limitations|constraints|system\s+prompt|programming|instructions|training)",
    r"\b(?:overrid(?:e|es|ing)|bypass(?:es|ing)?|circumvent|disable)\s+(?:all\s+|any\s+|the\s+)?"
    r"(?:previous|prior|system|developer'?s?)\s+(?:instructions|prompt|rules|guidelines)",
    r"\b(?:bypass|circumvent|remove|lift)\s+all\s+(?:restrictions|filters|guardrails|limits)",
    r"(?:绕过|解除|取消|关闭|突破|无视)(?:所有|一切|全部)?的?(?:安全)?(?:限制|过滤|审查|约束|防护)",
    r"\b(?:desactiva|elimina|evita|elude|salta(?:te)?)\s+(?:tus|los|las|todos\s+los|todas\s+las)\s*"
    r"(?:filtros|restricciones|directrices|normas|reglas|políticas)(?:\s+de\s+(?:seguridad|contenido))?",
    r"\b(?:contourne|contournez|contourner|désactive|désactivez|supprime)\s+(?:les|tes|vos|toutes\s+les)\s+"
    r"(?:restrictions|filtres|règles|garde-fous)(?:\s+de\s+sécurité)?",
    r"\b(?:umgehe|umgehen|deaktiviere|deaktivieren|hebe)\s+(?:die|deine|alle)\s+(?:sicherheits\w*|"
    r"einschränkungen|filter|richtlinien|schutzmaßnahmen)",
    r"\b(?:sicherheits\w+|einschränkungen|filter)\s+(?:zu\s+)?(?:umgehen|deaktivieren|aufheben|außer\s+kraft)",
    r"(?:обойди|обойти|отключи|отключить|сними|снять)\s+(?:все\s+)?(?:ограничени\w*|фильтр\w*|защит\w*)",
    r"(?:制限|フィルター|ルール|制約|ガードレール)を(?:回避|解除|無効|迂回)",
)

SYSTEM_PROMPT = Rule(
    r"\b(?:include|paste|put|copy|post|append|add|insert|quote)\s+(?:the\s+)?(?:full\s+|entire\s+|complete\s+)?"
    r"(?:text\s+of\s+)?(?:your|the)\s+(?:system\s+prompt|system\s+instructions|hidden\s+instructions|"
    r"initial\s+instructions|developer\s+message)",
    r"\b(?:reveal|print|show|output|repeat|display|leak|disclose|dump|tell\s+me|give\s+me|write\s+out|"
    r"return|share|expose)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|entire\s+|complete\s+|initial\s+|original\s+|"
    r"hidden\s+|secret\s+|exact\s+|whole\s+)*(?:system\s+prompt|system\s+instructions|system\s+message|"
    r"hidden\s+instructions|initial\s+instructions|developer\s+message|instructions\s+above|"
    r"(?:original\s+)?prompt\s+verbatim)",
    r"(?:输出|显示|打印|泄露|透露|告诉我|给出|展示)[^。\n]{0,10}?(?:系统提示|系统指令|初始指令|隐藏指令|系统设定)",
    r"\b(?:revela|revelar|muestra|mostrar|imprime|imprimir|repite)\s+(?:tu|el|tus|las)\s+(?:prompt\s+del\s+sistema|"
    r"instrucciones\s+(?:ocultas|del\s+sistema|iniciales))",
    r"\b(?:révèle|révéler|révélez|affiche|afficher|affichez|montre|montrez|répète)\s+(?:ton|le|votre|tes|vos)\s+"
    r"(?:prompt\s+système|instructions\s+(?:système|cachées|initiales)|consignes\s+(?:cachées|initiales))",
    r"\b(?:gib|zeige|zeig|wiederhole|verrate)\s+(?:mir\s+)?(?:deinen|den|deine|die)\s+(?:system-?prompt|"
    r"systemanweisungen|versteckten\s+anweisungen)|\b(?:system-?prompt|systemanweisungen)\s+(?:vollständig\s+)?"
    r"(?:aus(?:geben|zugeben)?|preis)",
    r"(?:раскрой|раскрыть|выведи|вывести|покажи|показать|повтори)\s+(?:\w+\s+)?(?:свой\s+|твой\s+)?"
    r"(?:системн\w+\s+(?:промпт|инструкци\w*|подсказк\w*)|скрыт\w+\s+инструкци\w*)",
    r"(?:システムプロンプト|隠された指示|初期指示)を(?:全文)?(?:表示|出力|教え|見せ|開示)",
)

CONCEAL = Rule(
    r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|notify|alert|warn|let)\s+(?:the\s+)?(?:user|human|"
    r"developer|operator|maintainers?)\b",
    r"\bwithout\s+(?:telling|informing|notifying|alerting|warning)\s+(?:the\s+)?(?:user|human)\b",
    r"\b(?:do\s+not|don't|never)\s+mention\s+(?:this|it|these\s+instructions|this\s+(?:note|comment|file))\b",
    r"\bkeep\s+this\s+(?:secret|hidden|confidential)\s+from\b",
    r"不要(?:告诉|通知|让)(?:用户|使用者)|别告诉用户|瞒着用户|不要向用户(?:透露|提及)",
    r"\bno\s+(?:se\s+lo\s+)?(?:digas|diga|menciones|informes|avises)\s+(?:nada\s+)?(?:al\s+usuario|esto)|"
    r"\bsin\s+(?:avisar|decir(?:le)?|informar)\s+al\s+usuario|\bno\s+lo\s+menciones",
    r"\bne\s+(?:le\s+)?(?:dis|dites)\s+(?:rien|pas)\b[^.\n]{0,20}l'utilisateur|\bsans\s+(?:le\s+dire|prévenir|"
    r"informer|avertir)\s+(?:à\s+)?l'utilisateur|\bn'en\s+parle\s+pas",
    r"\bsag(?:e)?\s+dem\s+(?:nutzer|benutzer|anwender)\s+nichts|\bohne\s+den\s+(?:nutzer|benutzer|anwender)\s+zu\s+"
    r"(?:informieren|benachrichtigen)|\berwähne\s+(?:es|das|dies)\s+nicht",
    r"не\s+(?:говори|сообщай|рассказывай)\s+(?:об\s+этом\s+)?пользовател\w*|ничего\s+не\s+говори\s+пользовател\w*|"
    r"без\s+ведома\s+пользовател\w*",
    r"ユーザー(?:に|には)(?:言わ|知らせ|伝え|教え)(?:ないで|ずに)",
)
