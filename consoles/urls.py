from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from adjudication.api import router as adjudication_router
from exemplars.api import router as exemplars_router
from feedback import embed_views
from feedback.api import router as feedback_router
from feedback.embed_api import router as feedback_embed_router
from feedback.export_api import router as feedback_export_router
from sampling.api import router as sampling_router
from teaching.api import router as teaching_router

from . import views
from .api import api

# Each domain app's API router is mounted here: project wiring, not domain logic.

# Before the flag routes: /flags/export must not be read as a flag id.
api.add_router("/v1", feedback_export_router)
api.add_router("/v1", feedback_router)
api.add_router("/v1", adjudication_router)
api.add_router("/v1", sampling_router)
api.add_router("/v1", teaching_router)
api.add_router("/v1", exemplars_router)
api.add_router("/v1", feedback_embed_router)  # publishable keys only (consoles.embed)

# A lost database answers 503 (nothing was written), other failures 500 (JSON under /api/).
handler500 = "consoles.views.server_error"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("tokens/", views.my_tokens, name="my_tokens"),
    path("tokens/<int:pk>/revoke/", views.my_token_revoke, name="my_token_revoke"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    # The flag widget and a sample chat page that embeds it: no login, no application in the URL.
    path("embed/flag.js", embed_views.flag_js, name="embed_flag_js"),
    path("demo/chat/", embed_views.demo_chat, name="demo_chat"),
    path("a/<slug:app_slug>/", views.application_home, name="application_home"),
    path("a/<slug:app_slug>/flags/", include("feedback.urls")),
    path("a/<slug:app_slug>/cases/", include("adjudication.urls")),
    path("a/<slug:app_slug>/sampling/", include("sampling.urls")),
    path("a/<slug:app_slug>/teaching/", include("teaching.urls")),
    path("a/<slug:app_slug>/bank/", include("exemplars.urls")),
    path("a/<slug:app_slug>/overview/", include("overview.urls")),
    path("a/<slug:app_slug>/webhooks/", include("consoles.webhook_urls")),
]
