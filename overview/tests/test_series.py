from datetime import date, timedelta

from overview.series import days_between, grid, status_levels

D = date(2026, 11, 1)


def test_levels_are_replayed_back_from_the_current_count():
    days = days_between(D, D + timedelta(days=3))
    transitions = [
        (D, "", "pending", 5),  # five flags arrive on day 0
        (D + timedelta(days=1), "pending", "approved", 2),
        (D + timedelta(days=2), "approved", "pending", 1),  # one re-opened
        (D + timedelta(days=5), "", "pending", 4),  # after the range, before now
    ]
    levels = status_levels(
        counts_now={"pending": 8, "approved": 1}, transitions=transitions, days=days, statuses=["pending", "approved"]
    )
    assert levels["pending"] == [5, 3, 4, 4]
    assert levels["approved"] == [0, 2, 1, 1]


def test_grid_fills_missing_days_with_zero_and_keeps_the_given_order():
    days = days_between(D, D + timedelta(days=2))
    keys, values = grid([(D, "bob", 2), (D + timedelta(days=2), "ann", 1), (D - timedelta(days=1), "ann", 9)],
                        days, ["zed"])
    assert keys == ["zed", "ann", "bob"]
    assert values == {"zed": [0, 0, 0], "ann": [0, 0, 1], "bob": [2, 0, 0]}
