"""Rules for tool-call bait: tool-call markup, destructive shell commands, and orders to call a
tool that deletes, transfers or grants, in the seven languages of the rules.

Destructive commands are reported wherever they are; SQL that drops data only inside tool-call
markup (alone it is everyday documentation); an English call verb only when it is an order.
"""

from __future__ import annotations

from .matching import Regex, Rule

TOOL_MARKUP = Rule(
    r"<tool_call>|<function_calls?>|<invoke\s+name=|<\|tool_call\|>|\[tool_calls\]|<\|python_tag\|>",
    r"\"tool_calls\"\s*:",
    r"\{\s*\"(?:name|tool|tool_name|function|recipient_name)\"\s*:\s*\"[^\"\n]{1,80}\"\s*,\s*"
    r"\"(?:arguments|parameters|args|input|tool_input|params)\"\s*:",
)
_DESTRUCTIVE_COMMANDS = (
    r"\brm\s+-(?:[a-z]*r[a-z]*f|[a-z]*f[a-z]*r)[a-z]*\s+(?:--no-preserve-root\s+)?(?:/\*?|~/?\*?|\$home/?|\*|"
    r"\.{1,2}/?)(?=[\s`'\";|&)]|$)",
    r"\bgit\s+push\s+(?:[^\n`]*\s)?(?:--force|-f)\b[^\n`]*\b(?:main|master)\b",
    r"\bgit\s+push\s+[^\n`]*\s\+(?:main|master)\b",
    r"\bmkfs(?:\.\w+)?\s+/dev/|\bdd\s+if=[^\n]*\bof=/dev/(?:sd|nvme|hd|disk)|\bchmod\s+-r\s+777\s+/(?:\s|$)",
    r":\(\)\s*\{\s*:\|:&\s*\};:|\bformat\s+c:|\bdel\s+/[sfq]\s+/[sfq]\s+c:\\|\bremove-item\s+-recurse\s+-force\s+c:\\",
)
DESTRUCTIVE_SHELL = Rule(*_DESTRUCTIVE_COMMANDS)  # reported wherever they are
# inside tool-call markup, SQL that drops data counts too (alone it is everyday documentation)
DESTRUCTIVE = Rule(*_DESTRUCTIVE_COMMANDS, r"\bdrop\s+(?:table|database)\b", r"\b(?:delete|wipe|destroy|purge)_?all\b")
_DANGER_STEM = (
    r"(?:delete|remove|drop|wipe|destroy|purge|erase|truncate|transfer|payment|grant|revoke|shutdown|nuke|"
    r"borrar|eliminar|destruir|supprimer|effacer|détruire|löschen|loeschen|entfernen|zerstören|удал|очист|"
    r"уничтож|删除|清空|销毁|削除|消去)"
)
# English: "call the delete_all tool" (an order: see IMPERATIVE_BEFORE), "delete all ... using the X tool"
TOOL_CALL_EN = Rule(
    rf"\b(?:call|invoke|use|run|execute|trigger)\s+(?:the\s+)?[`'\"]?[\w.-]*{_DANGER_STEM}[\w.-]*[`'\"]?"
    r"(?:\s+(?:tool|function|command|action|endpoint|api)\b|\s*\(\)|\s+(?:with|using)\s*[{(])",
)
TOOL_CALL_DIRECTIVE = Rule(
    r"\b(?:execute|run)\s+[`'\"]?(?:drop\s+(?:database|table)|truncate\s+table)\b[^\n]{0,80}?\b(?:using|with|via)\s+"
    r"(?:the\s+)?[\w-]+\s+tool\b",
    r"\b(?:delete|remove|wipe|destroy|erase|purge)\s+(?:all|every)\b[^.\n]{0,60}?\b(?:using|with|via|through)\s+"
    r"(?:the\s+)?[\w-]+\s+(?:tool|function|api)\b",
    rf"(?:调用|使用|执行|运行|触发)\s*[`'\"]?[\w.-]*{_DANGER_STEM}[\w.-]*[`'\"]?\s*(?:工具|函数|命令|接口)",
    rf"\b(?:llama|invoca|usa|utiliza|ejecuta|activa)\s+(?:a\s+)?(?:la\s+|el\s+)?(?:herramienta|función|funcion|"
    rf"comando)\s+[`'\"]?[\w.-]*{_DANGER_STEM}",
    rf"\b(?:appelle|appelez|invoque|invoquez|utilise|utilisez|exécute|exécutez|lance|lancez)\s+(?:l'|la\s+|le\s+)?"
    rf"(?:outil|fonction|commande)\s+[`'\"]?[\w.-]*{_DANGER_STEM}",
    rf"\b(?:rufe|ruf|nutze|verwende|benutze|führe|starte)\b[^.\n]{{0,40}}\b(?:tool|werkzeug|funktion|befehl)\s+"
    rf"[`'\"]?[\w.-]*{_DANGER_STEM}",
    rf"(?:вызови|вызовите|используй|используйте|запусти|запустите|выполни|выполните)\s+(?:инструмент|функцию|"
    rf"команду)\s+[`'\"]?[\w.-]*{_DANGER_STEM}",
    rf"{_DANGER_STEM}[\w.-]*[`'\"]?\s*(?:ツール|関数|コマンド)を[^。\n]{{0,40}}(?:呼び出|実行|使)",
)
# An English call verb counts when it is an order: at the start of a clause, or after one of these.
IMPERATIVE_BEFORE = Regex(
    r"(?:^|[.!?:;,\-–—(\n]|\b(?:please|now|then|first|immediately|always|must|should|you|and|just|also|"
    r"next|finally|simply|to))\s*$"
)
