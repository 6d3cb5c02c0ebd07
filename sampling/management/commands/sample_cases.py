"""`manage.py sample_cases --application SLUG --budget N [--max-per-pattern 2] [--enqueue] [--json]`

Makes (or finds, when nothing changed) the sampling plan and prints it. Stdout
depends only on the corpus and the arguments, so an unchanged corpus prints the
same bytes every run; what --enqueue did goes to stderr.
"""

import json

from consoles.management.base import DomainCommand
from consoles.selectors import application_get
from sampling.policy import DEFAULT_MAX_PER_PATTERN
from sampling.services import plan_create, plan_enqueue


class Command(DomainCommand):
    help = "Make the sampling plan of an application: which cases most need a human, within a budget."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--application", required=True, help="Application slug.")
        parser.add_argument("--budget", type=int, required=True, help="How many cases to select.")
        parser.add_argument(
            "--max-per-pattern", type=int, default=DEFAULT_MAX_PER_PATTERN,
            help="At most this many cases of one pattern (default %(default)s).",
        )
        parser.add_argument(
            "--enqueue", action="store_true",
            help="Put the selections into the adjudication queue (cases already queued are skipped).",
        )
        parser.add_argument("--json", action="store_true", help="Print the plan's canonical JSON.")

    def handle(self, *args, **options) -> None:
        application = application_get(slug=options["application"])
        plan, _ = plan_create(
            application=application,
            budget=options["budget"],
            max_per_pattern=options["max_per_pattern"],
            actor=None,
        )
        if options["json"]:
            self.stdout.write(plan.canonical_json)
        else:
            self._write_text(plan)
        if options["enqueue"]:
            result = plan_enqueue(plan=plan, actor=None)
            self.stderr.write(result.summary)

    def _write_text(self, plan) -> None:
        body = json.loads(plan.canonical_json)
        out = self.stdout
        out.write(
            f"plan {plan.plan_digest}  policy {plan.policy_name} v{plan.policy_version}  "
            f"budget {plan.budget}  max per pattern {plan.max_per_pattern}"
        )
        out.write(f"inputs {plan.inputs_digest}")
        out.write(
            f"ranked {plan.candidate_count} cases ({plan.signalled_count} with a signal; "
            f"{plan.gold_excluded_count} with a gold label not considered); "
            f"selected {plan.selected_count}; the cap left out {plan.capped_count}"
        )
        for selection in body["selections"]:
            out.write(f"{selection['rank']:>4}  {selection['case_id']}  {selection['reason']}")
