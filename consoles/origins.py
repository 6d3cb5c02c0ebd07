"""Web origins of a publishable key, in the one form a browser sends in `Origin`."""

from urllib.parse import urlsplit

from .errors import InvalidInput

MAX_ORIGINS = 20
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_normalize(value: str) -> str:
    """`https://Chat.Example.com:443/` -> `https://chat.example.com`, the form a browser
    sends in `Origin`; ValueError for anything that is not a web origin."""
    text = (value or "").strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{text!r} is not an origin: {exc}") from exc
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{text!r} is not an origin: give scheme and host, e.g. https://chat.example.com.")
    if parts.username or parts.password or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{text!r} is not an origin: scheme, host and port only, no path.")
    scheme, host = parts.scheme.lower(), parts.hostname.lower()
    if ":" in host:  # IPv6: the brackets urlsplit took off
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}:{port}"
    return f"{scheme}://{host}"


def origins_clean(values: list[str]) -> list[str]:
    """The normalised, de-duplicated origins of a publishable key, or InvalidInput naming `origins`."""
    cleaned: list[str] = []
    for value in values:
        try:
            origin = origin_normalize(value)
        except ValueError as exc:
            raise InvalidInput(str(exc), fields={"origins": str(exc)}) from exc
        if origin not in cleaned:
            cleaned.append(origin)
    if not cleaned:
        message = "A publishable key needs at least one origin (https://chat.example.com)."
        raise InvalidInput(message, fields={"origins": message})
    if len(cleaned) > MAX_ORIGINS:
        message = f"A publishable key lists at most {MAX_ORIGINS} origins."
        raise InvalidInput(message, fields={"origins": message})
    return cleaned
