from consoles.text import count


def test_count_puts_the_noun_in_the_right_number():
    assert [count(n, "case") for n in (0, 1, 2, 1200)] == ["0 cases", "1 case", "2 cases", "1,200 cases"]
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == "3 entries"
