"""Category labels under a chart break at spaces rather than being cut."""

from overview.svg import _tick_lines


def test_a_two_word_label_takes_two_lines_not_an_ellipsis():
    assert _tick_lines("prompt injection", 10) == ["prompt", "injection"]
    assert _tick_lines("toxicity", 10) == ["toxicity"]
    assert _tick_lines("a very long label indeed", 8) == ["a very", "long la…"]
    assert _tick_lines("unbreakablewordhere", 8) == ["unbreak…"]
