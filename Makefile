# The two set-up commands of README.md: `make run` and `make test`.
# Each installs what it needs (system packages via apt-get when missing, then a virtualenv).
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: run test bench load proto system-deps test-deps

run: $(VENV)/.installed
	$(VENV)/bin/pprof-share serve --host $(HOST) --port $(PORT)

test: test-deps $(VENV)/.installed-test
	$(VENV)/bin/ruff check share tests bench hatch_build.py
	$(VENV)/bin/ruff format --check share tests bench hatch_build.py
	$(VENV)/bin/pytest --numprocesses=auto --maxprocesses=4 -m 'not latency'
	$(VENV)/bin/pytest -m latency

bench: test-deps $(VENV)/.installed-test
	$(PY) bench/run.py
	$(PY) bench/parse.py
	$(PY) bench/compute.py
	$(PY) bench/refine.py
	$(PY) bench/paint.py
	$(PY) bench/compare.py
	$(PY) bench/collection.py

load: test-deps $(VENV)/.installed-test
	@bash .ci/system-deps.sh load
	$(PY) bench/load.py
	$(PY) bench/fleet.py

proto: $(VENV)/.installed-test
	$(VENV)/bin/pip install -q -e '.[proto]'
	$(PY) -m grpc_tools.protoc -Ishare/pprof/_proto --python_out=share/pprof/_proto \
		--pyi_out=share/pprof/_proto share/pprof/_proto/profile.proto

system-deps:
	@bash .ci/system-deps.sh base

test-deps:
	@bash .ci/system-deps.sh test

# scan.c is compiled on install (hatch_build.py): a changed one is built again.
$(VENV)/.installed: pyproject.toml hatch_build.py share/pprof/scan.c | system-deps
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test]'
	touch $@
