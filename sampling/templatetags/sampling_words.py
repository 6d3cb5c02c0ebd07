"""Template filters of the sampling screens: `{% load sampling_words %}`."""

from django import template

from consoles.text import humanise

register = template.Library()


@register.filter
def signal_words(signal: str) -> str:
    """`{{ "gap:unresolved_conflict"|signal_words }}` is "gap: unresolved conflict": a
    badge short enough to scan; the Reason beside it says the same in a sentence, and
    the key stays in the plan's JSON and the badge's data-signal."""
    kind, _, name = str(signal).partition(":")
    return f"{humanise(kind)}: {humanise(name)}" if name else humanise(kind)
