"""The console served by gunicorn on loopback, on a scratch database, configured as
deployed (DEBUG=0, persistent connections). Shared by the reliability harness and
the benchmarks (`bench/bench_flags.py`).

    with scratch_database("postgresql", "reliability_load") as url:
        env = server_env(url)
        migrate(env)
        token = issue_token(env, slug="load")
        with Server(env, workers=4) as server:
            ...server.url("/api/v1/flags")...
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_HOST = os.environ.get("RELIABILITY_PG_HOST", "127.0.0.1")
PG_PORT = os.environ.get("RELIABILITY_PG_PORT", "5432")
PG_USER = os.environ.get("RELIABILITY_PG_USER", "postgres")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_url(name: str) -> str:
    return f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"


def psql(sql: str, database: str = "postgres") -> str:
    result = subprocess.run(
        ["psql", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, "-d", database, "-v", "ON_ERROR_STOP=1",
         "-qAt", "-c", sql], check=True, capture_output=True, text=True)
    return result.stdout.strip()


def drop_pg_database(name: str) -> None:
    subprocess.run(["dropdb", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, "--if-exists", "--force", name],
                   check=False, capture_output=True)


def fresh_pg_database(name: str) -> str:
    drop_pg_database(name)
    subprocess.run(["createdb", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, name], check=True)
    return pg_url(name)


@contextmanager
def scratch_database(vendor: str, name: str) -> Iterator[str]:
    """A DATABASE_URL for a new, empty database, dropped afterwards."""
    if vendor == "postgresql":
        url = fresh_pg_database(name)
        try:
            yield url
        finally:
            drop_pg_database(name)
    else:
        folder = tempfile.mkdtemp(prefix=f"{name}-")
        yield "sqlite:///" + os.path.join(folder, f"{name}.sqlite3")


def server_env(database_url: str, settings: str = "consoles.settings", **extra: str) -> dict[str, str]:
    """Production mode, as deployed (no debug query log); plain HTTP on loopback."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": settings, "DEBUG": "0",
           "SECRET_KEY": "reliability-only-secret-key-" + "x" * 40, "ALLOWED_HOSTS": "127.0.0.1",
           "SECURE_SSL_REDIRECT": "0", "DATABASE_URL": database_url}
    env.pop("SQLITE_PATH", None)
    env.update(extra)
    return env


def migrate(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)


def django_script(env: dict[str, str], code: str) -> str:
    """Run `code` in a configured Django process; returns its stdout."""
    return subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], cwd=ROOT, env=env,
                          check=True, capture_output=True, text=True).stdout.strip()


def issue_token(env: dict[str, str], slug: str) -> str:
    """Create application `slug` and return a new application token's secret."""
    return django_script(env, (
        "from consoles.services import application_create, token_issue\n"
        f"app = application_create(slug={slug!r}, name={slug!r}.title())\n"
        "print(token_issue(name='harness', application=app).secret)"
    ))


class Server:
    """gunicorn serving the console; its log is kept for scanning after the run."""

    def __init__(self, env: dict[str, str], *, workers: int = 4, log_level: str = "warning") -> None:
        self.env = env
        self.workers = workers
        self.log_level = log_level
        self.port = free_port()
        self.log_path = Path(tempfile.mkstemp(prefix="reliability-gunicorn-", suffix=".log")[1])
        self.process: subprocess.Popen | None = None

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> "Server":
        log = self.log_path.open("ab")
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        # Its own session, so a crash can be simulated by killing the whole group.
        self.process = subprocess.Popen(
            [gunicorn, "consoles.wsgi", "--workers", str(self.workers), "--bind", f"127.0.0.1:{self.port}",
             "--log-level", self.log_level, "--graceful-timeout", "10"],
            cwd=ROOT, env=self.env, stdout=log, stderr=log, start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited at start:\n{self.log()[-2000:]}")
            try:
                urllib.request.urlopen(self.url("/healthz"), timeout=2)  # noqa: S310 - loopback
                return self
            except (OSError, urllib.error.HTTPError):
                time.sleep(0.1)
        raise RuntimeError(f"gunicorn did not answer within 60 s:\n{self.log()[-2000:]}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            # Graceful stop lets workers finish; on a loaded machine that can take a while.
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.crash()

    def crash(self) -> None:
        """SIGKILL the master and every worker at once: a power cut, as far as the server knows."""
        if self.process is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def request(method: str, url: str, body: dict | None = None, token: str | None = None,
            timeout: float = 30) -> tuple[int, bytes, float]:
    """(status, body, seconds); status 0 when the connection failed."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310 - loopback
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:  # noqa: S310 - loopback
            return response.status, response.read(), time.perf_counter() - started
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), time.perf_counter() - started
    except OSError:
        return 0, b"", time.perf_counter() - started
