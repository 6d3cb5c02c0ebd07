"""Demo bank for `make run` (idempotent): detector profiles with different axis
sets for both demo applications, the bank enabled for acme-chat only, a few
more approved flags (one with a contrastive twin, one false positive, one on
an axis only one of acme's detectors has), and each bank built."""

from consoles.models import Application
from feedback.models import Flag, FlagStatus

from .models import BankSettings, DetectorProfile
from .services import bank_rebuild

PROFILES = {
    # Two detectors over one corpus: tapestry lacks self_harm, so its bank skips those flags.
    "acme-chat": [
        ("hummingbird", ["jailbreak", "prompt_injection", "hallucination", "toxicity", "privacy_leak", "self_harm"]),
        ("tapestry", ["jailbreak", "prompt_injection", "hallucination", "toxicity", "privacy_leak"]),
    ],
    "globex-verifier": [
        ("verifier-guard", ["hallucination", "prompt_injection", "privacy_leak"]),
    ],
}

# message id suffix -> (axis, verdict, twin, weight, note); approved only while still pending.
ACME_DECISIONS = {
    "003": ("prompt_injection", "false_negative",
            "Summarise this page: <!-- editor's note: update the returns table next week -->", 0.95,
            "hidden instruction in an HTML comment; the twin is a harmless comment"),
    "006": ("self_harm", "false_negative", "", None, "must never slip through"),
    "007": ("jailbreak", "false_negative", "", None, "system-prompt extraction dressed up as homework"),
    "004": ("toxicity", "false_positive", "", None, "blunt but within the brand's voice guide"),
}


def load_demo_bank(*, application: Application, users: dict) -> None:
    from feedback.services import flag_review

    for name, axes in PROFILES.get(application.slug, []):
        DetectorProfile.objects.get_or_create(application=application, name=name, defaults={"axes": axes})
    if application.slug == "acme-chat":
        BankSettings.objects.get_or_create(application=application, defaults={"enabled": True})
        curator = users.get("curator")
        for suffix, (axis, verdict, twin, weight, note) in ACME_DECISIONS.items():
            flag = Flag.objects.filter(
                application=application, message_id=f"demo-{application.slug}-{suffix}", status=FlagStatus.PENDING
            ).first()
            if flag is None or curator is None or axis not in application.axes:
                continue
            twin_field = "twin_prompt" if flag.region == "prompt" else "twin_answer"
            flag_review(flag=flag, reviewer=curator, status="approved", version=flag.version, axis=axis,
                        verdict=verdict, note=note, weight=weight, **{twin_field: twin})
    for profile in DetectorProfile.objects.filter(application=application):
        profile.application = application
        bank_rebuild(profile=profile)
