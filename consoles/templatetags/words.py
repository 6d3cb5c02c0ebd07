"""Template filters for what people read: `{% load words %}`."""

from django import template

from consoles import text

register = template.Library()


@register.filter
def humanise(value: object) -> str:
    """`{{ case.gold_label|humanise }}`: a configured key ("insufficient_evidence")
    as words ("insufficient evidence"); empty stays empty."""
    if value is None or value == "":
        return ""
    return text.humanise(str(value))
