import pytest

from consoles.models import Role
from consoles.tests.factories import MembershipFactory, UserFactory
from teaching.tests.factories import CorpusEntryFactory, EvalCaseFactory


@pytest.fixture
def operator(db, application):
    """A human curator who decides proposals."""
    return MembershipFactory(user=UserFactory(username="olga"), application=application, role=Role.CURATOR).user


@pytest.fixture
def world(db, application):
    """A small corpus and eval set: paris/capital_of -> france is answered correctly
    (public), tokyo/capital_of -> japan is not covered yet (dev), and a holdout case
    that is answered correctly."""
    CorpusEntryFactory(application=application, subject="paris", object="france")
    CorpusEntryFactory(application=application, subject="rome", object="italy")
    EvalCaseFactory(application=application, case_id="e-paris", split="public", subject="paris", expected_object="france")
    EvalCaseFactory(application=application, case_id="e-tokyo", split="dev", subject="tokyo", expected_object="japan")
    EvalCaseFactory(application=application, case_id="e-rome", split="holdout", subject="rome", expected_object="italy")
    return application
