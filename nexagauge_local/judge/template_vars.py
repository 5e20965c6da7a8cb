"""Which context variables a chat template reads, from its Jinja syntax tree.

Why not a substring test: Llama Guard 3 8B's template hard-codes its categories and says "the
below categories" in its task line, so `"categories" in template` is true for a template that
never reads a `categories` extra; the custom category passed to it would be dropped while the
answer grammar still forces its code. jinja2.meta.find_undeclared_variables lists exactly the
names the template looks up in the context (a name read before a `{% set %}` of it, as in
`{% if categories is not defined %}`, counts: the template reads what the caller passes).
"""

from __future__ import annotations

from collections.abc import Iterable

from jinja2 import TemplateSyntaxError, meta
from jinja2.sandbox import ImmutableSandboxedEnvironment


def template_variables(chat_template: str) -> frozenset[str] | None:
    """The context variables `chat_template` reads; None when it does not parse here (a tag
    only transformers' own environment knows, say): the caller then cannot rely on it."""
    # transformers renders chat templates in this environment with loop controls on
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    try:
        return frozenset(meta.find_undeclared_variables(env.parse(chat_template)))
    except TemplateSyntaxError:
        return None


def template_reads_all(chat_template: str | None, names: Iterable[str]) -> bool:
    """True when the template reads every one of `names` (a template that does not parse, or
    none, reads nothing we can count on)."""
    if not chat_template:
        return False
    found = template_variables(chat_template)
    return found is not None and all(name in found for name in names)
