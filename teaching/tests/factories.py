import factory
from django.db.models import Max

from consoles.tests.factories import ApplicationFactory
from teaching.models import ActorKind, Candidate, CorpusEntry, CorpusSource, EvalCase


class CandidateFactory(factory.django.DjangoModelFactory):
    """An eligible candidate unless told otherwise."""

    class Meta:
        model = Candidate

    application = factory.SubFactory(ApplicationFactory)
    candidate_id = factory.Sequence(lambda n: f"cand-{n}")
    subject = factory.Sequence(lambda n: f"city{n}")
    intent = "capital_of"
    connective = "is"
    object = factory.Sequence(lambda n: f"country{n}")
    polarity = "affirms"
    claim_domain = "factual"
    evidence = factory.LazyFunction(lambda: [{"source": "corpus", "ref": "entry:1"}])
    boundary_clean = True
    actor_kind = ActorKind.SYSTEM


class CorpusEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CorpusEntry

    application = factory.SubFactory(ApplicationFactory)
    # The application's next number, as the services number entries.
    number = factory.LazyAttribute(
        lambda o: (CorpusEntry.objects.filter(application=o.application).aggregate(last=Max("number"))["last"] or 0) + 1
    )
    subject = factory.Sequence(lambda n: f"seed{n}")
    intent = "capital_of"
    connective = "is"
    object = factory.Sequence(lambda n: f"land{n}")
    polarity = "affirms"
    claim_domain = "factual"
    source = CorpusSource.SEED


class EvalCaseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EvalCase

    application = factory.SubFactory(ApplicationFactory)
    case_id = factory.Sequence(lambda n: f"case-{n}")
    split = "public"
    subject = factory.Sequence(lambda n: f"seed{n}")
    intent = "capital_of"
    expected_object = factory.Sequence(lambda n: f"land{n}")
    expected_polarity = "affirms"


def candidate_payload(candidate_id: str = "c-1", **overrides) -> dict:
    """A valid API/JSONL candidate record (eligible unless overridden)."""
    payload = {
        "candidate_id": candidate_id,
        "proposed_chain": {"subject": "tokyo", "intent": "capital_of", "connective": "is", "object": "japan"},
        "polarity": "affirms",
        "claim_domain": "factual",
        "evidence": [{"source": "corpus", "ref": "entry:7"}],
        "boundary_clean": True,
        "hedge": None,
    }
    payload.update(overrides)
    return payload
