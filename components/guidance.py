"""Who the model is and how it should work: identity, inline prompt, tool use, per-provider
guidance, per-channel output format, the skills index. All session-stable (first layer)."""

from __future__ import annotations

from .component import ContextComponent
from .inputs import Ctx


def identity(ctx: Ctx) -> str:
    a = ctx.agent
    lines = [f"You are {a.name} (agent_id={a.agent_id})."]
    if a.description:
        lines.append(a.description.strip())
    return "<identity>\n" + "\n".join(lines) + "\n</identity>"


def inline_prompt(ctx: Ctx) -> str | None:
    text = (ctx.agent.inline_prompt or "").strip()
    return f"<inline_prompt>\n{text}\n</inline_prompt>" if text else None


TOOL_ENFORCEMENT = (
    "<tool_enforcement>\n"
    "When you need to perform an action, use tool calls. Do not just describe what you would do: "
    "actually do it.\n"
    "</tool_enforcement>"
)


def has_tools(ctx: Ctx) -> bool:
    return bool(ctx.tools or ctx.deferred_tools or ctx.memory is not None)


# One entry per provider; None means the provider needs no extra guidance (its tool use is native).
MODEL_GUIDANCE: dict[str, str | None] = {
    "openai": "- Call functions with arguments that are valid JSON matching the schema; never put a call in prose.",
    "anthropic": None,
    "google": (
        "- Emit function calls as structured calls, not as code in text.\n"
        "- Use absolute paths when a tool takes a path."
    ),
    "xai": "- Call functions with arguments that are valid JSON matching the schema.",
    "mistral": "- Call functions with arguments that are valid JSON matching the schema.",
    "deepseek": "- Call functions with arguments that are valid JSON matching the schema; keep reasoning out of them.",
    "ollama": "- Call one function at a time and wait for its result before the next.",
    "vllm": "- Call one function at a time and wait for its result before the next.",
}
# Provider names as clients report them (GenAI ``gen_ai.provider.name`` values included).
PROVIDER_ALIASES = {
    "gemini": "google",
    "gcp.gemini": "google",
    "gcp.vertex_ai": "google",
    "gcp.gen_ai": "google",
    "vertex": "google",
    "azure": "openai",
    "azure.ai.openai": "openai",
    "openai-compatible": "openai",
    "aws.bedrock": "anthropic",
    "x_ai": "xai",
}

_GUIDANCE_BODY = (
    "<tool_use>\n"
    "- Use tools when they improve correctness or grounding; don't stop early when another call would "
    "materially help.\n"
    "</tool_use>\n"
    "<verify>\n"
    "- Check prerequisites before acting; verify results before declaring done.\n"
    "</verify>"
)


def provider_key(provider: str) -> str:
    p = (provider or "").lower()
    return PROVIDER_ALIASES.get(p, p)


def model_guidance(ctx: Ctx) -> str | None:
    key = provider_key(ctx.provider)
    if key not in MODEL_GUIDANCE:
        return None
    extra = MODEL_GUIDANCE[key]
    if extra is None:
        return None
    return f"<execution_guidance>\n[Execution guidance ({key})]\n{_GUIDANCE_BODY}\n{extra}\n</execution_guidance>"


# One rule per channel. "{limit}" is filled from Ctx.channel_limit (or the default below).
PLATFORM_RULES: dict[str, str] = {
    "webui": "Full Markdown is supported; code blocks can be folded; there is no length limit.",
    "telegram": "Use Markdown. Wrap code in fences. Keep replies focused.",
    "discord": "Use Markdown. Wrap code in fences. Keep replies focused.",
    "slack": "Use Slack mrkdwn (*bold*, _italic_, `code`, fenced code); no headings or tables.",
    "wechat": "Plain text only, no Markdown. Short paragraphs.",
    "sms": "Plain text, at most {limit} characters, no formatting.",
}
DEFAULT_LIMITS = {"sms": 160}


def platform_format(ctx: Ctx) -> str | None:
    rule = PLATFORM_RULES.get(ctx.channel)
    if rule is None:
        return None
    limit = ctx.channel_limit or DEFAULT_LIMITS.get(ctx.channel)
    rule = rule.format(limit=limit)
    return f"<platform_format>\n[Output channel: {ctx.channel}]\n{rule}\n</platform_format>"


def skills_index(ctx: Ctx) -> str:
    names = ", ".join(f"/{s.name.lstrip('/')}" for s in ctx.skills)
    lines = [f"Available skills: {names}"]
    described = [s for s in ctx.skills if s.description]
    lines.extend(f"- /{s.name.lstrip('/')}: {s.description}" for s in described)
    return "<skills>\n" + "\n".join(lines) + "\n</skills>"


COMPONENTS = [
    ContextComponent("identity", "L0", 1, identity),
    ContextComponent("tool_enforcement", "L0", 3, lambda ctx: TOOL_ENFORCEMENT, condition=has_tools),
    ContextComponent(
        "model_guidance", "L0", 4, model_guidance, condition=lambda ctx: provider_key(ctx.provider) in MODEL_GUIDANCE
    ),
    ContextComponent("platform_format", "L0", 5, platform_format),
    ContextComponent("inline_prompt", "L0", 6, inline_prompt),
    ContextComponent("skills_index", "L0", 7, skills_index, condition=lambda ctx: bool(ctx.skills)),
]
