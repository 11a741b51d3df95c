"""Masking secrets and personal paths before a transcript is shared."""

from __future__ import annotations

import re
from typing import Any

from kernelbench.transcripts.model import Event, Session

SECRET_PATTERNS = [
    re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}"),          # Anthropic / OpenAI keys
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),                              # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),                    # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),                  # Slack
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),                        # Google API key
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),                           # Hugging Face
    re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}\b"),                     # GitLab
]
BEARER = re.compile(r"(?i)\b(bearer|token)\s+[A-Za-z0-9._~+/=\-]{16,}")
ASSIGNED = re.compile(r"(?i)\b([A-Z0-9_]*(?:api[_-]?key|secret|token|password|passwd)[A-Z0-9_]*)(\s*[:=]\s*)"
                      r"(['\"]?)([^\s'\"]{8,})\3")
HOME = re.compile(r"(?:/Users|/home)/[^/\s'\"`]+|/root(?=/)|[A-Za-z]:\\\\?Users\\\\?[^\\\s'\"`]+")
BASE64 = re.compile(r"[A-Za-z0-9+/_\-]{200,}={0,2}")
MASK = "[REDACTED]"


def redact_text(text: str, *, base64: bool = False) -> str:
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(MASK, text)
    text = BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
    text = ASSIGNED.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}{m.group(3)}", text)
    text = HOME.sub("~", text)
    if base64:
        text = BASE64.sub(lambda m: f"[base64 blob, {len(m.group(0))} characters]", text)
    return text


def redact_value(value: Any, *, base64: bool = False) -> Any:
    if isinstance(value, str):
        return redact_text(value, base64=base64)
    if isinstance(value, list):
        return [redact_value(item, base64=base64) for item in value]
    if isinstance(value, dict):
        return {redact_value(k, base64=base64): redact_value(v, base64=base64) for k, v in value.items()}
    return value


TEXT_FIELDS = ("text", "output", "path", "diff", "raw", "name", "source")


def redact_session(session: Session, *, base64: bool = False) -> Session:
    """Mask in place (the session was parsed for this purpose) and return it."""
    for event in session.walk():
        _redact_event(event, base64)
    session.cwd = redact_text(session.cwd, base64=False) if session.cwd else session.cwd
    session.source = redact_text(session.source, base64=False) if session.source else session.source
    if session.final_message:
        session.final_message = redact_text(session.final_message, base64=base64)
    return session


def _redact_event(event: Event, base64: bool) -> None:
    for field in TEXT_FIELDS:
        value = getattr(event, field)
        if isinstance(value, str):
            setattr(event, field, redact_text(value, base64=base64))
    if event.input is not None:
        event.input = redact_value(event.input, base64=base64)
