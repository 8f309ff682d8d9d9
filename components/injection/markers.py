"""Structural markers: chat-template tokens (``<|im_start|>``, ``[INST]``, ``<<SYS>>``, ...) and
role labels at the start of a line ("System:", "**Assistant:**", "[SYSTEM]:", "### System",
"<system>", "[system](#...)"), with what ends the turn a label opens.

Markers mean nothing by themselves: ``detection`` reports them only where they are used as
structure (outside code, next to a role or another token, before orders).
"""

from __future__ import annotations

import re

from .matching import Regex, Rule

# Chat-template tokens -> finding name.
TOKEN_NAMES = {
    "<|im_start|>": "<|im_start|>",
    "<|im_end|>": "<|im_start|>",
    "[inst]": "[INST]",
    "[/inst]": "[INST]",
    "<<sys>>": "<<SYS>>",
    "<</sys>>": "<<SYS>>",
    "</s>": "</s>",
    "<s>": "</s>",
}
TOKEN = Rule(
    r"<\|im_(?:start|end|sep)\|>",
    r"\[/?inst\]",
    r"<</?sys>>",
    r"</?s>",
    r"<\|(?:begin_of_text|end_of_text|start_header_id|end_header_id|eot_id|eom_id|python_tag|endoftext|"
    r"system|user|assistant|end|start|channel|message|return|call|constrain|tool_call|"
    r"(?:begin|end)[▁_ ]of[▁_ ]sentence)\|>",
    r"<(?:start|end)_of_turn>",
    r"\[/?(?:system_prompt|available_tools|tool_calls|tool_results)\]",
)
ROLE_AFTER_TOKEN = Regex(r"[ \t]*\n?[ \t]*(?:system|user|assistant|developer|model|tool|ipython|human)\b")

# Role labels at the start of a line: "System:", "**Assistant:**", "[SYSTEM]:", "### System",
# "<system>", "[system](#...)".
_ROLE_WORDS = (
    r"system(?:\s+(?:message|prompt|override|notice|instructions?))?|assistant|ai|developer|model|operator|"
    r"administrator|admin|human|user|系统(?:消息|提示词?)?|助手|用户|sistema|asistente|usuario|système|systeme|"
    r"utilisateur|assistent|benutzer|nutzer|система|ассистент|пользователь|システム(?:プロンプト)?|アシスタント|"
    r"ユーザー|system-?prompt|prompt\s+del\s+sistema|prompt\s+système|системный\s+промпт"
)
ROLE_LABEL = Regex(
    rf"\n[ \t]{{0,3}}(?:(?P<h>#{{1,6}})[ \t]*(?P<hr>{_ROLE_WORDS})[ \t]*:?[ \t]*$"
    rf"|<(?P<tr>{_ROLE_WORDS})>[ \t]*$"
    rf"|\[(?P<br>{_ROLE_WORDS})\](?:\(#[^)\n]*\))?[ \t]*(?::[ \t]*)?(?=\S|$)"
    rf"|(?:\*\*|__)?(?P<cr>{_ROLE_WORDS})[ \t]*(?:(?:\*\*|__)[ \t]*:|:[ \t]*(?:\*\*|__)?)(?=[ \t]*\S)"
    rf"|[\"']?role[\"']?[ \t]*:[ \t]*[\"']?(?P<yr>system|assistant|developer)[\"']?,?[ \t]*$)",
    re.MULTILINE,
)
TURN_END = Regex(
    rf"\n[ \t]*\n|\n(?=[ \t]*(?:#{{1,6}}[ \t]*(?:{_ROLE_WORDS})[ \t]*$"
    rf"|(?:\[|<|\*\*)?(?:{_ROLE_WORDS})[ \t]*(?:\*\*|\]|>)?[ \t]*:))",
    re.MULTILINE,
)
PRIVILEGED_ROLE = Regex(
    r"system|assistant|ai$|developer|model|operator|admin|系统|助手|sistema|asistente|système|systeme|assistent|"
    r"система|ассистент|システム|アシスタント"
)
SYSTEM_PROMPT_ROLE = Regex(r"prompt|промпт|系统提示|システムプロンプト")
