"""The README's curl examples, as written, against the demo data (`make run`): each one's
method, path, headers and body are read from the README itself and sent through the test
client, so an example that stops working (a route, a token, a case id, a field) fails here.

An example whose body is a file the reader writes (`-d @batch.json`) is a synopsis, not a
command to paste, and is skipped; everything else is run in order, as a reader would.
"""

import re
import shlex
from pathlib import Path
from urllib.parse import urlsplit

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = pytest.mark.django_db


def _shell_blocks(text: str) -> list[str]:
    blocks, current, inside = [], [], False
    for line in text.splitlines():
        if line.startswith("```"):
            if inside:
                blocks.append("\n".join(current))
                current = []
            inside = not inside
        elif inside:
            current.append(line)
    return blocks


def readme_curls() -> list[tuple[str, list[str]]]:
    """(the command as written, its words after the shell's quoting and $TOKEN) in README order."""
    commands = []
    variables: dict[str, str] = {}
    for block in _shell_blocks(README.read_text()):
        pending = ""
        for line in re.sub(r"\\\n", " ", block).splitlines():
            pending = f"{pending}\n{line}" if pending else line.strip()
            try:
                words = shlex.split(pending, comments=True)
            except ValueError:  # a quote still open: the command goes on on the next line
                continue
            command, pending = pending, ""
            if words and (match := re.fullmatch(r"([A-Z_]+)=(\S+)", words[0])) and len(words) == 1:
                variables[match[1]] = match[2]
            elif words and words[0] == "curl":
                words = [re.sub(r"\$([A-Z_]+)", lambda m: variables[m[1]], w) for w in words]
                commands.append((command, words))
    return commands


def _request(words: list[str]) -> tuple[str, str, dict[str, str], str | None]:
    method, url, headers, body = None, None, {}, None
    rest = iter(words[1:])
    for word in rest:
        if word == "-s":
            continue
        if word == "-X":
            method = next(rest)
        elif word == "-H":
            name, _, value = next(rest).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            body = next(rest)
        elif word.startswith("http"):
            url = word
        else:
            raise AssertionError(f"an option this test does not know: {word}")
    assert url is not None
    return method or ("POST" if body is not None else "GET"), url, headers, body


def test_the_readme_has_its_curl_examples():
    paths = {urlsplit(_request(words)[1]).path for _, words in readme_curls()}
    assert {"/api/v1/me", "/api/v1/flags", "/api/v1/score", "/api/v1/cases/acme-chat-case-024",
            "/api/v1/cases/acme-chat-case-024/feedback"} <= paths


def test_every_readme_curl_example_works_on_the_demo_data(demo_loaded, client):
    answers = {}
    for line, words in readme_curls():
        method, url, headers, body = _request(words)
        if body is not None and body.startswith("@"):
            continue  # a file the reader writes: a synopsis
        parts = urlsplit(url)
        assert (parts.hostname, parts.port) == ("127.0.0.1", 8000), line  # `make run`'s address
        extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items() if k != "Content-Type"}
        response = client.generic(method, parts.path + (f"?{parts.query}" if parts.query else ""),
                                  body or "", content_type=headers.get("Content-Type"), **extra)
        assert 200 <= response.status_code < 300, (line, response.status_code, response.content[:300])
        answers.setdefault(parts.path, response.json())
    # What the README says the answers hold.
    assert answers["/api/v1/me"]["applications"] == [{"slug": "acme-chat", "role": "integration"}]
    assert answers["/api/v1/flags"]["suggested_axis"] == "hallucination"
    score = answers["/api/v1/score"]
    assert score["bank"]["enabled"] is True
    assert score["axis_energy"]["jailbreak"]["flag"] is True
    assert score["axis_energy"]["jailbreak"]["exemplar_match"]["verdict"] == "false_negative"
    assert score["axis_energy"]["toxicity"]["flag"] is False
    assert answers["/api/v1/cases/acme-chat-case-024"]["case_id"] == "acme-chat-case-024"
    feedback = answers["/api/v1/cases/acme-chat-case-024/feedback"]
    assert (feedback["case_id"], feedback["disposition"]) == ("acme-chat-case-024", "disagrees")
