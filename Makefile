# dlbox.stack: two commands do all the set-up on a fresh machine.
#   make workstation   -> venv, pinned tools, this collection, then playbooks/workstation.yml on this machine
#   make test          -> venv, lint, ansible-test sanity, unit tests, test images, every Molecule scenario
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/build/collections
export ANSIBLE_INJECT_FACT_VARS := false
COLL := build/collections/ansible_collections/dlbox/stack
SANITY_ROOT := build/sanity/ansible_collections/dlbox/stack
LIMIT ?= workstations
# make bench: hosts and forks of the fleet figure (plan.yml on fake hosts planned on paper); the fleet rollout
# (bench_fleet.sh: site.yml to 1, 3 and 6 containers) reads BENCH_SIZES, BENCH_PIPELINING
BENCH_HOSTS ?= 116
BENCH_FORKS ?= 20
EXTRA ?=
# make test's static checks, run side by side (target static)
STATIC := lint-tree packaging sanity units

.PHONY: help venv venv-run collection collection-link workstation plan lint lint-tree packaging docs changelog sanity units static $(addprefix static-,$(STATIC)) integration images docker-engine host-deps molecule test test-heavy build bench clean

help: ## this list
	@echo "make TARGET: every target of this Makefile (make test is the whole suite; docs/development.md)"
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
	@printf "  %-16s %s\n" "static-<check>" "one check of make static: $(addprefix static-,$(STATIC))"

# Two sets of pinned controller tools in the one .venv: what the playbooks need (requirements.txt:
# ansible-core and one collection, for make plan / make workstation) and what the tests add
# (requirements-dev.txt, which includes it; every test target goes through `venv`).
$(VENV)/.installed-run: requirements.txt tools/venv.sh
	bash tools/venv.sh $(VENV) requirements.txt
	@touch $@

# The test tools' venv keeps pip's byte-compiling. PIP_COMPILE=false here installs `ansible` in 6 s instead of 37, but
# the one clean `make test` with it (2026-12-04) took 3,105 s against 2,606 the day before, the test containers' CPU
# up as much as the controller's (so perhaps a slower machine that day); untested since, so not kept.
$(VENV)/.installed: requirements-dev.txt requirements.txt tools/venv.sh
	bash tools/venv.sh $(VENV) requirements-dev.txt
	@touch $@ $(VENV)/.installed-run

venv: $(VENV)/.installed ## .venv with the pinned run-time and test tools (requirements-dev.txt)

venv-run: $(VENV)/.installed-run ## .venv with the pinned run-time tools only (requirements.txt)

# The collection, installed where ansible.cfg and ANSIBLE_COLLECTIONS_PATH look, from this tree: a link,
# left alone when it is already right (runs side by side must not see it vanish), else made afresh.
collection: venv collection-link ## venv, then this collection linked under build/collections

collection-link: ## link this tree as the collection under build/collections (no venv)
	@if [ "$$(readlink $(COLL) 2>/dev/null)" != "../../../.." ]; then \
	  rm -rf build/collections/ansible_collections/dlbox && \
	  mkdir -p build/collections/ansible_collections/dlbox && \
	  ln -s ../../../.. $(COLL); fi

workstation: venv-run collection-link ## set up this machine as a deep-learning workstation (playbooks/workstation.yml; LIMIT, EXTRA)
	ansible-playbook playbooks/workstation.yml --limit $(LIMIT) $(EXTRA)

plan: venv-run collection-link ## print the stack dlbox.stack would install here; changes nothing (playbooks/plan.yml)
	ansible-playbook playbooks/plan.yml --limit $(LIMIT) $(EXTRA)

# lint-tree: yamllint, ansible-lint, the changelog fragments; packaging: the packaging judges in their own cached
# venv (build/packaging-venv): Galaxy's importer on the built tarball and antsibull-docs' docs lint; any warning or
# error fails (tests/scripts/check-packaging.sh). make lint runs both; make test runs them side by side.
lint: lint-tree packaging ## lint-tree and packaging

lint-tree: collection ## yamllint, ansible-lint, antsibull-changelog lint
	yamllint -s .
	ansible-lint --offline
	antsibull-changelog lint

packaging: collection ## Galaxy's importer and antsibull-docs on the built tarball
	bash tests/scripts/check-packaging.sh

# Fold the changelog fragments into the release galaxy.yml names and write CHANGELOG.rst; fragments stay,
# so running it again after new fragments only adds those.
changelog: collection ## fold changelogs/fragments into CHANGELOG.rst for galaxy.yml's version
	antsibull-changelog release --is-collection --collection-namespace dlbox --collection-name stack \
	  --version $$(sed -n 's/^version: *//p' galaxy.yml)

# HTML docs for the collection (modules, filters, roles from their argument specs): build/docs/build/html.
docs: collection ## the collection's HTML docs in build/docs/build/html
	bash tests/scripts/build-docs.sh $(CURDIR)/build/docs

# ansible-test needs the collection at ansible_collections/dlbox/stack: a copy of the tracked files.
sanity: collection ## ansible-test sanity on a copy of the tracked files
	@rm -rf build/sanity && mkdir -p $(SANITY_ROOT)
	@git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t $(SANITY_ROOT)/
	bash tests/scripts/ansible-test-offline.sh $(BIN)/python
	cd $(SANITY_ROOT) && git init -q && git add -A && \
	  ansible-test sanity --color no --requirements --venv \
	    --python $$($(BIN)/python -c 'import sys;print("%d.%d"%sys.version_info[:2])')

units: collection ## the unit tests (tests/unit)
	$(BIN)/python -m pytest -q tests/unit

host-deps: ## debootstrap and the test machine's packages
	bash tests/scripts/host-deps.sh

docker-engine: ## start a Docker engine when none answers
	bash tests/scripts/docker-engine.sh

images: host-deps docker-engine ## build (or reuse) the test images dlbox-test:*
	@s=$$(date +%s); bash tests/images/build.sh && echo "images: built or reused in $$(( $$(date +%s) - s )) s"

# Real ansible-playbook runs (plan.yml), the collection build, and the fixture apt repositories in
# real containers.
# make test's share of tests/integration: not the `heavy` ones (the CI image builds), and the README quickstart on the
# machines that run it to the end (Debian 12, twice) or start from nothing (Ubuntu 24.04 bare) and on Ubuntu 24.04; the
# machines blocked at python_env (no CPU torch for their Python here: Debian 13, Ubuntu 22.04 and 26.04) in test-heavy.
QUICKSTART_LIGHT = debian12,ubuntu2404,ubuntu2404-bare
QUICKSTART_HEAVY = debian13,ubuntu2204,ubuntu2604
integration: collection images ## the integration tests (tests/integration) but the heavy ones
	DLBOX_QUICKSTART_MACHINES=$${DLBOX_QUICKSTART_MACHINES:-$(QUICKSTART_LIGHT)} \
	  $(BIN)/python -m pytest -q --durations=12 -m "not heavy" tests/integration

molecule: collection images ## Molecule scenarios (SCENARIOS=..., MOLECULE_DISTROS=...)
	bash tests/scripts/molecule.sh $(SCENARIOS)

# The static checks (lint, sanity, units: CPU) run beside the test images' build (debootstrap and apt: network),
# and side by side: one after another they kept one of the 2 cores idle (316 s wall for 343 CPU-s, 2026-12-03); each
# one's output comes whole when it ends, then its time. Then integration and molecule run side by side (each prints
# when it ends).
# The collection link is made once before: four collection-link recipes at once raced (rm -rf, mkdir, ln).
static: collection ## lint-tree, packaging, sanity and units side by side
	@$(MAKE) --no-print-directory -j4 --output-sync=target $(addprefix static-,$(STATIC))

# packaging goes first for the CPU (the others run niced): galaxy-importer gives its own ansible-lint run 180 s and fails
# the import past that, which happened with all four on 2 cores and a little more load (2026-12-03).
$(addprefix static-,$(STATIC)): static-%: venv
	@s=$$(date +%s); $(if $(filter packaging,$*),,nice -n 10) $(MAKE) --no-print-directory $* && \
	  echo "make test: $* in $$(( $$(date +%s) - s )) s"

# Each phase prints its wall seconds and the CPU seconds the whole machine spent in it (/proc/stat): on 2 cores the
# suite is CPU-bound, so CPU-s / 2 is the least wall time a phase can take there.
CPU_NOW = awk '/^cpu / { print int(($$2 + $$3 + $$4 + $$7 + $$8) / 100) }' /proc/stat
test: venv ## every test from nothing: lint, sanity, units, images, integration, Molecule
	@start=$$(date +%s); c0=$$($(CPU_NOW)); \
	$(MAKE) --no-print-directory -j2 --output-sync=target static images || exit 1; \
	c1=$$($(CPU_NOW)); \
	echo "make test: static checks and test images in $$(( $$(date +%s) - start )) s, $$(( c1 - c0 )) CPU-s"; \
	mid=$$(date +%s); \
	$(MAKE) --no-print-directory -j2 --output-sync=target integration molecule || exit 1; \
	echo "make test: integration and molecule in $$(( $$(date +%s) - mid )) s, $$(( $$($(CPU_NOW)) - c1 )) CPU-s"; \
	echo "make test: all green in $$(( $$(date +%s) - start )) s, $$(( $$($(CPU_NOW)) - c0 )) CPU-s on $$(nproc) cores"

# Multi-GB real installs, left out of `make test` (scenarios marked `heavy`): tensorflow-cpu from PyPI;
# nvidia_driver_ubuntu: the driver role against Ubuntu's live archive (22.04, 24.04; best-effort reachable);
# cuda_distro: Debian's real nvidia-cuda-toolkit (about 1.6 GB of .debs) compiling and linking with its nvcc.
test-heavy: collection images ## the multi-GB and live-archive scenarios left out of make test
	@start=$$(date +%s); \
	bash tests/scripts/molecule.sh --heavy && \
	$(BIN)/python -m pytest -q --durations=12 -m heavy tests/integration && \
	DLBOX_QUICKSTART_MACHINES=$(QUICKSTART_HEAVY) $(BIN)/python -m pytest -q tests/integration/test_quickstart.py && \
	echo "make test-heavy: all green in $$(( $$(date +%s) - start )) s"

bench: collection images ## resolver, plan.yml, fleet and no-op workstation timings (CPU host, FIXTURE GPU host)
	$(BIN)/python tests/benchmarks/bench_resolver.py
	$(BIN)/python tests/benchmarks/bench_apt_pin.py
	@start=$$(date +%s%N); ansible-playbook playbooks/plan.yml --limit $(LIMIT) >/dev/null; \
	  echo "plan.yml on this machine: $$(( ($$(date +%s%N) - start) / 1000000 )) ms wall"
	$(BIN)/python tests/benchmarks/bench_plan.py $(BENCH_HOSTS) $(BENCH_FORKS)
	bash tests/benchmarks/bench_workstation_noop.sh
	bash tests/benchmarks/bench_workstation_gpu_noop.sh
	bash tests/benchmarks/bench_fleet.sh
	$(BIN)/python tests/benchmarks/bench_fleet_ssh.py

# Vendor data from the real package indexes (Ubuntu's and Debian's archives, PyPI): report what differs
# from data/compat.yml (also in build/data-refresh-report.txt) and rewrite its machine-maintained section
# distro_drivers; the report and `git diff data/compat.yml` are the review. REFRESH_ARGS: e.g. --check
# (report only, exit 1 on differences) or --ubuntu-mirror URL (see tools/data_refresh.py --help).
.PHONY: data-refresh
data-refresh: venv ## refresh data/compat.yml from the real package indexes (REFRESH_ARGS)
	$(BIN)/python tools/data_refresh.py --write --report build/data-refresh-report.txt $(REFRESH_ARGS)

# Regenerate data/gpu_catalog.yml (every NVIDIA GPU, from NVIDIA's supported-gpus.json in Ubuntu's
# nvidia-kernel-common-<branch> packages and the chips of Debian's pci.ids); prints entries, chips and what it
# could not place. CATALOG_ARGS: e.g. --check
# (exit 1 when the catalog would change) or local copies (see tools/gpu_catalog.py --help).
.PHONY: gpu-catalog
gpu-catalog: venv ## regenerate data/gpu_catalog.yml (CATALOG_ARGS)
	$(BIN)/python tools/gpu_catalog.py $(CATALOG_ARGS)

build: venv ## build the collection tarball
	@rm -f dlbox-stack-*.tar.gz
	ansible-galaxy collection build --force .

clean: ## remove build/ and .cache/
	rm -rf build .cache
