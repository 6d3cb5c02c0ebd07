from datetime import UTC, datetime, timedelta, timezone

from django.template import Context, Template

from consoles.text import count, humanise
from consoles.timestamps import on_screen


def test_count_puts_the_noun_in_the_right_number():
    assert [count(n, "case") for n in (0, 1, 2, 1200)] == ["0 cases", "1 case", "2 cases", "1,200 cases"]
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == "3 entries"


def test_humanise_reads_a_key_as_words_in_code_and_in_templates():
    assert humanise("insufficient_evidence") == "insufficient evidence"
    assert humanise("should-have-refused") == "should-have-refused"
    rendered = Template("{% load words %}[{{ a|humanise }}][{{ b|humanise }}]").render(
        Context({"a": "discovery_promoted", "b": None}))
    assert rendered == "[discovery promoted][]"


def test_on_screen_is_the_screens_utc_shape_whatever_the_zone_given():
    assert on_screen(datetime(2026, 11, 30, 14, 2, 59, tzinfo=UTC)) == "2026-11-30 14:02 UTC"
    tokyo = timezone(timedelta(hours=9))
    assert on_screen(datetime(2026, 11, 30, 23, 2, tzinfo=tokyo)) == "2026-11-30 14:02 UTC"
