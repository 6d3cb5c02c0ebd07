# The two commands a new user needs: `make run` and `make test`.
HOST ?= 127.0.0.1
PORT ?= 8000
VENV ?= .venv
# The first interpreter on PATH that is Python 3.12 or newer.
PYTHON ?= $(shell for p in python3.14 python3.13 python3.12 python3; do \
	if $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then echo $$p; break; fi; done)
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test e2e bench reliability reliability-quick lint migrate demo check-python clean worker

$(STAMP): pyproject.toml requirements/constraints.txt
	@test -n "$(PYTHON)" || { echo "error: Python 3.12 or newer is required (none found on PATH)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c requirements/constraints.txt -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

migrate: install
	@mkdir -p var
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py load_demo --origin http://$(HOST):$(PORT)

# The tasks worker (webhook deliveries) runs beside the server and stops with it.
run: demo
	$(PY) manage.py db_worker --queue-name '*' & worker=$$!; \
	trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	$(PY) manage.py runserver $(HOST):$(PORT)

worker: migrate
	$(PY) manage.py db_worker --queue-name '*'

# One worker per core (pytest-xdist), each with its own test database; a test module
# stays on one worker, so a module's shared demo data is written once.
PYTEST_WORKERS ?= auto
test: install
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

e2e: install
	$(PY) -m pytest tests_e2e -p no:randomly

bench: install
	$(PY) -m bench

# Load, races, fuzzing, faults and the catalogue suites, as one table (docs/reliability.md).
reliability: install
	$(PY) -m reliability

reliability-quick: install
	$(PY) -m reliability --quick

lint: install
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) var
