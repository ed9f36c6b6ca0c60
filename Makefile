# gpucluster.acceptance — developer entry points.
#   make test   set up (venv, links) and run every check: lint, sanity, unit and integration tests
#   make demo   set up and run acceptance.yml on the simulated cluster
#   make ee     the execution environment's build context (docs/execution-environment.md)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
COLLECTIONS := $(CURDIR)/.build/collections
LINK := $(COLLECTIONS)/ansible_collections/gpucluster/acceptance
# Outside the work tree: inside it ansible-test would list only files git tracks there.
SANITY_ROOT := $(or $(TMPDIR),/tmp)/gpucluster-sanity/ansible_collections/gpucluster/acceptance
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(BIN):$(PATH)
export HYPOTHESIS_PROFILE ?= ci

.PHONY: test demo demo-nvl72 setup system-deps venv link lint sanity unit integration docs-check ee clean

test: setup lint sanity docs-check pytest

setup: system-deps venv link

# Debian packages (Slurm, munge, build tools); a no-op when all are installed.
system-deps:
	tools/install-system-deps.sh

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.txt meta/ee-requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

link:
	mkdir -p $(dir $(LINK))
	ln -sfn $(CURDIR) $(LINK)

lint: setup
	$(BIN)/ansible-lint --offline --profile production

# ansible-test needs the collection under ansible_collections/<ns>/<name>: sanity runs on a copy.
sanity: setup
	tools/sanity.sh $(SANITY_ROOT)

docs-check: setup
	tools/docs-check.sh

# Unit and property tests are pure Python on one core each: they run on UNIT_WORKERS processes
# (pytest-xdist). The integration tests run on INTEGRATION_WORKERS processes too: half of their
# time is waiting on Slurm, timeouts and tools; each worker shares simulated clusters through its
# pool (tests/integration/cluster_pool.py), and tests that share host state stay on one worker
# (tests/conftest.py, XDIST_GROUPS).
# A short basetemp: slurmd's socket paths under each test's run directory must stay < 108 bytes.
# --durations: the slowest tests and fixtures of every run, for the suite's time budget.
UNIT_WORKERS ?= 2
INTEGRATION_WORKERS ?= 2
pytest: setup
	$(BIN)/python -m pytest tests/unit -n $(UNIT_WORKERS) --durations=10 --basetemp=$(or $(TMPDIR),/tmp)/gcat-unit
	$(BIN)/python -m pytest tests/integration -n $(INTEGRATION_WORKERS) --durations=40 --basetemp=$(or $(TMPDIR),/tmp)/gcat

demo: setup
	tools/demo.sh

# Two simulated GB200 NVL72 racks (sim/clusters/nvl72.yml, docs/nvlink-fabric.md); the per-node
# stages, the NVLink domains and their capacity (the multi-node fabric and workload stages skipped).
demo-nvl72: setup
	DEMO_SPEC=sim/clusters/nvl72.yml DEMO_RUN_DIR=$(CURDIR)/.build/sim/nvl72 \
	DEMO_INVENTORY=$(CURDIR)/.build/sim/nvl72-inventory DEMO_LOG=$(CURDIR)/.build/demo-nvl72-playbook.log \
	tools/demo.sh --skip-tags fabric,workload,rdma

unit: setup
	$(BIN)/python -m pytest tests/unit -n $(UNIT_WORKERS)

# The execution environment's build context (context/, offline; docs/execution-environment.md):
# then `ansible-builder build -t gpucluster-acceptance-ee:0.1.0` where podman or docker can pull.
ee: venv
	rm -rf dist context
	$(BIN)/ansible-galaxy collection build --output-path dist .
	cp dist/gpucluster-acceptance-*.tar.gz dist/gpucluster-acceptance.tar.gz
	$(BIN)/ansible-builder create --output-filename Containerfile

clean:
	rm -rf .build tests/output .pytest_cache dist context
