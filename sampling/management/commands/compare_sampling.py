"""`manage.py compare_sampling --application SLUG --budget K --seed S [--draws R] [--json]`

The policy's top K against R seeded random draws of K among the gold-labelled
cases. Below 20 gold labels it says so and computes nothing (exit 0: that is
an answer, not a failure).
"""

import json

from consoles.management.base import DomainCommand
from consoles.selectors import application_get
from sampling.comparison import DEFAULT_DRAWS
from sampling.policy import DEFAULT_MAX_PER_PATTERN
from sampling.selectors import sampling_comparison


class Command(DomainCommand):
    help = "Does the sampling policy find more human-changed answers than random draws?"

    def add_arguments(self, parser) -> None:
        parser.add_argument("--application", required=True, help="Application slug.")
        parser.add_argument("--budget", type=int, required=True, help="K: the policy's top K.")
        parser.add_argument("--seed", type=int, required=True, help="Seed of the random draws.")
        parser.add_argument("--draws", type=int, default=DEFAULT_DRAWS, help="R (default %(default)s).")
        parser.add_argument("--max-per-pattern", type=int, default=DEFAULT_MAX_PER_PATTERN)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        application = application_get(slug=options["application"])
        result = sampling_comparison(
            application=application,
            budget=options["budget"],
            seed=options["seed"],
            draws=options["draws"],
            max_per_pattern=options["max_per_pattern"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), sort_keys=True))
            return
        if not result.enough:
            self.stdout.write(result.message)
            return
        self.stdout.write(
            f"gold-labelled cases: {result.labelled_count} (share where the human changed the "
            f"answer: {result.base_rate:.3f})"
        )
        self.stdout.write(
            f"policy top {result.selected_count}: {result.policy_share:.3f} "
            f"({result.policy_hits} of {result.selected_count})"
        )
        self.stdout.write(
            f"random, {result.draws} draws of {result.selected_count} (seed {result.seed}): "
            f"mean {result.random_mean:.3f}, 95% interval {result.random_low:.3f}–{result.random_high:.3f}"
        )
        self.stdout.write(f"draws at least as good as the policy: {result.draws_at_least_policy:.3f}")
        self.stdout.write(result.message)
