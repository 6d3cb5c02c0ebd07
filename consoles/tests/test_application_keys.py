"""The rule that a key stored rows use stays, as a service (not the model's clean),
and the consoles.extensions <-> consoles.models import cycle being gone."""

import subprocess
import sys
from pathlib import Path

import pytest

from consoles.errors import InvalidInput
from consoles.models import Application
from consoles.services import application_keys_in_use
from consoles.tests.factories import ApplicationFactory
from feedback.tests.factories import FlagFactory

pytestmark = pytest.mark.django_db


def _edited(application: Application, **changes) -> Application:
    edited = Application.objects.get(pk=application.pk)
    for field, value in changes.items():
        setattr(edited, field, value)
    return edited


def test_removing_a_problem_a_flag_uses_is_refused_naming_the_field():
    application = ApplicationFactory()
    FlagFactory(application=application, problem="fabricated")
    edited = _edited(application, problems=[p for p in application.problems if p["key"] != "fabricated"])
    edited.full_clean(validate_unique=False)  # the model alone no longer reads other apps' rows
    with pytest.raises(InvalidInput) as caught:
        application_keys_in_use(application=edited)
    assert caught.value.fields == {"problems": "Still used, so it cannot be removed: 'fabricated' by flags."}


def test_a_key_no_row_uses_may_go_and_a_new_application_has_nothing_to_compare():
    application = ApplicationFactory()
    FlagFactory(application=ApplicationFactory(slug="other"), problem="offensive", suggested_axis="toxicity")
    application_keys_in_use(application=_edited(
        application,
        axes=[a for a in application.axes if a != "toxicity"],
        problems=[p for p in application.problems if p["axis"] != "toxicity"],
    ))
    application_keys_in_use(application=Application(slug="fresh", axes=[], problems=[]))


def test_the_models_import_without_the_extension_registry_and_back():
    """consoles.extensions imports no model at run time, and consoles.models no extension."""
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys, consoles.extensions; assert 'consoles.models' not in sys.modules; "
        "import ast, pathlib; tree = ast.parse(pathlib.Path('consoles/models.py').read_text()); "
        "names = {n.module or '' for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}; "
        "names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}; "
        "assert not {m for m in names if 'extensions' in m or m.split('.')[0] in "
        "('feedback', 'sampling', 'adjudication', 'exemplars', 'overview', 'teaching')}, names"
    )
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)
