import factory
from django.contrib.auth import get_user_model

from consoles.models import Application, Membership, Role
from consoles.services import token_issue


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests-1")

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):  # noqa: N805
        if create:
            obj.save()


class ApplicationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Application
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"app-{n}")
    name = factory.LazyAttribute(lambda a: f"Application {a.slug}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    application = factory.SubFactory(ApplicationFactory)
    role = Role.CURATOR


def application_token(application: Application, name: str = "integration") -> str:
    """Issue an application token and return its secret (for Authorization headers)."""
    return token_issue(name=name, application=application).secret


def publishable_key(application: Application, origins: tuple[str, ...] = ("https://chat.example.com",),
                    name: str = "widget") -> str:
    """Issue a publishable key (the flag widget's) and return its secret."""
    return token_issue(name=name, application=application, publishable=True, origins=list(origins)).secret


def personal_token(user, name: str = "laptop") -> str:
    return token_issue(name=name, user=user).secret


class ApiTokenFactory(factory.django.DjangoModelFactory):
    """An application token row; use `application_token()` when the secret is needed."""

    class Meta:
        model = "consoles.ApiToken"

    kind = "application"
    name = factory.Sequence(lambda n: f"token-{n}")
    application = factory.SubFactory(ApplicationFactory)
    user = None
    prefix = "cc_app_xxxxx"
    digest = factory.Sequence(lambda n: f"{n:064x}")
