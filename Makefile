# cephqos-lab — raw logs → tidy Parquet → notebooks → report.
# `make report` and `make test` bootstrap everything they need (a .venv from environment.yml's pip list).
SHELL := /bin/bash
PY    ?= .venv/bin/python
DATA  ?= data/raw
PROC  ?= data/processed
# where `make report` writes the executed notebooks, report.html and claims.csv, and the figures
REPORTS ?= reports
FIGURES ?= figures

.PHONY: all help venv cc tools data report report-pdf test lab bench manifest capture-fio capture-fio-grid clean
all: report

# the user targets first, then the capture targets (each runs real benchmarks: the machine alone)
help:
	@printf '%s\n' \
	  'make report       render reports/report.html from DATA (default data/raw; DATA=your/folder for yours)' \
	  'make test         every test, the notebooks checked by nbval (what CI runs: .ci/run)' \
	  'make data         ingest DATA into PROC (data/processed) when its content changed' \
	  'make lab          JupyterLab on the notebooks' \
	  'make report-pdf   the report printed to reports/report.pdf by headless Chromium' \
	  'make manifest     write DATA/MANIFEST.sha256 (sha256sum -c reads it)' \
	  'make bench        the speed and memory benchmarks → reports/bench.md (the machine alone)' \
	  'make venv         the .venv of environment.yml'"'"'s pins and the C part' \
	  'make clean        remove the processed tables and the rendered report' \
	  '' 'capture (docs/capture.md; each needs the machine alone):'
	@grep -oE '^capture-[a-z0-9-]+:|^ceph-reef[a-z-]*:|^(pilot|cbt-pilot)-verdict:' $(firstword $(MAKEFILE_LIST)) \
	  | tr -d ':' | sed 's/^/  make /'

# --- environment: the pip list of environment.yml is the one dependency list ------------------------
# Installed by uv (itself a wheel from the package index, put in the venv first), which sets up the same
# pinned list in 11 s here where pip takes 62 s (reports/bench.md); pip when uv cannot be had (UV=no forces
# it).  uv does not compile bytecode at install (that would add 20 s for every installed package): Python
# writes it for the modules actually imported, at first import, so the Makefile lets it
# (PYTHONDONTWRITEBYTECODE is unexported below; without the bytecode every notebook's imports took 9 s, not 5).
UV_VERSION ?= 0.13.9
UV ?= yes
unexport PYTHONDONTWRITEBYTECODE
.venv/.installed: environment.yml
	@command -v python3 >/dev/null || { echo "python3 (3.11) is needed"; exit 1; }
	@start=$$EPOCHREALTIME; test -x .venv/bin/python || python3 -m venv .venv; \
	  sed -n '/^ *- pip:/,$$p' environment.yml | sed -n 's/^ *- \([A-Za-z].*==.*\)$$/\1/p' > .venv/requirements.txt; \
	  how=pip; if [ "$(UV)" = yes ] && { test -x .venv/bin/uv || .venv/bin/pip install --quiet \
	      --disable-pip-version-check "uv==$(UV_VERSION)" 2>/dev/null; } && \
	    .venv/bin/uv pip install --quiet --python .venv/bin/python -r .venv/requirements.txt; then how=uv; \
	  else .venv/bin/pip install --quiet --disable-pip-version-check -r .venv/requirements.txt || exit 1; fi; \
	  printf 'venv: %s packages by %s, %.1f s\n' "$$(grep -c . .venv/requirements.txt)" "$$how" \
	    "$$(echo "$$EPOCHREALTIME $$start" | awk '{print $$1 - $$2}')"
	@echo "$(CURDIR)" > "$$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/cephqos-lab.pth"
	@touch $@
# The C part (analysis/ingest/_cscan.c, _blkscan.c) is built here, at set-up, not at a reader's first use; rebuilt
# when a source changes.  Without a compiler it says so and the readers take their plain path (same tables).
.venv/.native: .venv/.installed analysis/ingest/_cscan.c analysis/ingest/_blkscan.c analysis/ingest/_native.py
	@$(MAKE) --no-print-directory cc
	@$(PY) -m analysis.ingest._native
	@touch $@
venv: .venv/.installed .venv/.native

# A C compiler for the C part: installed when missing and we are root; otherwise the plain path is used.
cc:
	@command -v cc >/dev/null || command -v gcc >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 gcc libc6-dev >/dev/null; \
	  else echo "no C compiler (sudo apt-get install gcc): the readers use their plain path"; fi; }

# Debian tools the tests drive for real (fio 3.33, blkparse/btt, headless chromium for the report and
# pdftoppm to look at its PDF, the
# Python modules CBT 9d6480f imports under Debian's python3);
# installed when missing and we are root.
tools:
	@missing=""; command -v fio >/dev/null || missing="fio"; \
	  command -v blkparse >/dev/null && command -v btt >/dev/null || missing="$$missing blktrace"; \
	  command -v chromium >/dev/null || missing="$$missing chromium"; \
	  command -v pdftoppm >/dev/null || missing="$$missing poppler-utils"; \
	  /usr/bin/python3 -c 'import yaml, lxml' 2>/dev/null || missing="$$missing python3-yaml python3-lxml"; \
	  [ -z "$$missing" ] || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 $$missing >/dev/null; \
	  else echo "missing: $$missing — sudo apt-get install $$missing (tests that need them will skip)"; fi; }

# --- data: raw → processed (a DAG step; re-runs when raw content changes) ------------------------------
# Re-ingest when the tables are not what an ingest of DATA would write now, decided by content, never by
# mtimes (`analysis stale`, on every make: FORCE): the tables' SHA-256s against tables.json, the ingest
# code's digest, DATA's path and manifest entries, DATA's list of files, and each file's (size, mtime,
# ctime, inode) against what the ingest recorded before reading it, a file whose signature moved re-hashed
# against the SHA-256 of what it read.  `cp -p`, `rsync -t` and `touch -r` set an old mtime back, which
# `find -newer` took for "unchanged"; none can set the ctime.  The venv and the folder named are order-only
# prerequisites: the check compares the library versions and DATA's path itself, so a venv touched by a
# rebuild of the C part, or an identical reinstall, re-ingests nothing.  The report recipe's later sub-makes
# pass TABLES_CHECKED=yes: one check per `make report`.  (12.5 k raw files as make prerequisites cost make
# 4.5 s per check here.)
.PHONY: FORCE
$(PROC)/data-dir.txt: FORCE
	@mkdir -p $(PROC); echo "$(abspath $(DATA))" | cmp -s - $@ || echo "$(abspath $(DATA))" > $@
# ingest exit 1 = some files failed and the tables hold the rest: the report is made from what was read,
# and `analysis failures` ends `make report` with exit 1 naming them (file:line: what was expected)
$(PROC)/tables.json: $(if $(TABLES_CHECKED),,FORCE) | .venv/.installed .venv/.native $(PROC)/data-dir.txt
	@start=$$EPOCHREALTIME; why=$$($(PY) -m analysis stale $(DATA) --processed $(PROC)) && { \
	  printf '  %-28s %6.1f s  (%s)\n' "tables current" "$$(echo "$$EPOCHREALTIME $$start" | awk '{print $$1 - $$2}')" \
	    "$${why#fresh: }"; exit 0; }; \
	  echo "ingest $(DATA) → $(PROC) ($${why#stale: }):"; start=$$EPOCHREALTIME; \
	  $(PY) -m analysis ingest $(DATA) --out $(PROC) --no-progress || [ $$? -eq 1 ]; rc=$$?; \
	  printf '  %-28s %6.1f s\n' ingest "$$(echo "$$EPOCHREALTIME $$start" | awk '{print $$1 - $$2}')"; exit $$rc
data: $(PROC)/tables.json

manifest: .venv/.installed
	$(PY) -m analysis manifest $(DATA)

# --- report: notebooks executed by papermill, rendered to HTML ---------------------------------------
# Each notebook is executed with the same parameters.  It re-runs when it, the analysis code or the data
# it reads change: $(PROC)/notebooks.mk (written by `analysis deps`) ties it to the stamps of the
# campaigns its parameters cell names and to the published CSVs it cites; an unchanged input is not
# recomputed.  Listed longest first (durations measured here, 2026-11-29), so the jobs finish together.
REPORT_NB := 30-qos-snaptrim-recovery 35-versions 10-consistency 31-qos-scrub 40-block-workload 20-io-schedulers 33-qos-v2 32-qos-campaign 15-compare 00-ingest 50-rgw 60-history
ANALYSIS_PY := $(shell find analysis -name '*.py')
ifneq ($(filter $(REPORTS)/%,$(MAKECMDGOALS)),)
-include $(PROC)/notebooks.mk
endif
# one notebook, run once per study: the two Quincy QoS studies (analysis.qos_study) are sections 30 and 31
NB_SRC_30-qos-snaptrim-recovery := 30-qos-study
NB_SRC_31-qos-scrub := 30-qos-study
NB_SRC = $(or $(NB_SRC_$(1)),$(1))
$(PROC)/notebooks.mk: $(PROC)/tables.json $(wildcard notebooks/*.ipynb) analysis/report.py
	@$(PY) -m analysis deps $(foreach n,$(REPORT_NB),$(n)=notebooks/$(call NB_SRC,$(n)).ipynb) --processed $(PROC) --reports $(REPORTS) --out $@
	@touch $@  # kept unchanged when its rules are (it is only included), but now checked: not re-made again
# parameters only some notebooks have (papermill warns about the others)
NB_PARAMS_00-ingest := -p reuse_processed True
NB_PARAMS_30-qos-snaptrim-recovery := -p study part1
NB_PARAMS_31-qos-scrub := -p study part2
# figures_dir only when FIGURES is not the notebooks' default (00-ingest has no such parameter)
NB_FIGURES := $(if $(filter-out figures,$(FIGURES)),-p figures_dir "$(abspath $(FIGURES))")
# The data set the notebooks of $(REPORTS) are run on: DATA, PROC and the SHA-256 of PROC's tables.json
# (which every ingest rewrites).  Checked on every make (FORCE), rewritten only when it changes, like
# data-dir.txt: switching DATA or PROC, or a re-ingest, re-runs every notebook of $(REPORTS); otherwise
# notebooks made from another data set (newer than this PROC's stamps) would be kept.  Re-run, not an output
# folder per data set: $(REPORTS) and $(FIGURES) are shared outputs (figures/*.png would still hold the other
# data's figures); to keep two reports side by side pass REPORTS= and FIGURES=.  Each executed notebook
# also records its data set (metadata "cephqos") and `analysis report` refuses notebooks of different ones.
$(REPORTS)/dataset.txt: FORCE
	@mkdir -p $(REPORTS); tmp="$(REPORTS)/.dataset.txt.tmp-$$$$"; \
	  { echo "data=$(abspath $(DATA))"; echo "processed=$(abspath $(PROC))"; \
	    echo "tables_sha256=$$(if [ -f "$(PROC)/tables.json" ]; then sha256sum < "$(PROC)/tables.json" | cut -d' ' -f1; \
	      else echo '(missing)'; fi)"; } > "$$tmp" && \
	  if cmp -s "$$tmp" $@; then rm -f "$$tmp"; else mv "$$tmp" $@; fi
.SECONDEXPANSION:
# Quiet: run-notebook prints one line per notebook (its name and seconds); papermill's progress bar is off
# and what the kernel says on stderr goes to $(REPORTS)/.logs/NAME.log, printed when the notebook fails.
# It also renders the notebook's report section (--section, cached in $(REPORTS)/.sections/), in parallel.
# The executed notebook is written to a temp file and renamed; the temp is removed however the recipe ends
# (a failed cell, a full disk, Ctrl-C, SIGTERM: the traps, each of which removes it, as a second signal —
# make passes SIGTERM on to the recipe too — can cut the EXIT trap short), so no half-written notebook is
# left behind.
$(REPORTS)/%.ipynb: notebooks/$$(call NB_SRC,$$*).ipynb $(ANALYSIS_PY) $(REPORTS)/dataset.txt
	@mkdir -p $(REPORTS)/.logs; tmp="$@.tmp.ipynb"; \
	  trap 'rm -f "$$tmp"' EXIT; trap 'rm -f "$$tmp"; exit 130' INT; trap 'rm -f "$$tmp"; exit 143' TERM; \
	  $(PY) -m analysis run-notebook --data "$(abspath $(DATA))" --processed "$(abspath $(PROC))" --section $* \
	  $< "$$tmp" -- --no-progress-bar --log-level WARNING -p data_dir "$(abspath $(DATA))" \
	  -p processed_dir "$(abspath $(PROC))" $(NB_PARAMS_$*) $(NB_FIGURES) -k python3 --cwd notebooks \
	  2> $(REPORTS)/.logs/$*.log || { cat $(REPORTS)/.logs/$*.log >&2; exit 1; }; \
	  mv "$$tmp" $@
$(REPORTS)/%.html: $(REPORTS)/%.ipynb
	$(PY) -m jupyter nbconvert --to html --no-input --output-dir $(REPORTS) --output $*.html $< --log-level WARN
# notebooks and the claims run as many at a time as the machine has cores (REPORT_JOBS) once the data is
# built; one line each (name, seconds), the wall time at the end
REPORT_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# the studies' claims with a verdict per campaign (reports/claims.csv, validity.csv: the gate, findings.json; skipped, with a
# message, when the data has none of these campaigns); a job beside the notebooks: it reads only the tables
CLAIMS_CAMPAIGNS ?= qos-2026 qos-v2 qos-reef
$(REPORTS)/claims.csv: $(ANALYSIS_PY) $(REPORTS)/dataset.txt
	@start=$$EPOCHREALTIME; $(PY) -m analysis claims --processed $(PROC) --out $@ --campaign $(CLAIMS_CAMPAIGNS) \
	  > $(REPORTS)/claims.log || { cat $(REPORTS)/claims.log; exit 1; }; \
	  printf '  %-28s %6.1f s  (verdict counts: %s)\n' claims "$$(echo "$$EPOCHREALTIME $$start" | awk '{print $$1 - $$2}')" $(REPORTS)/claims.log
# The notebooks' kernels are forked from one process that has imported what they import
# (analysis.forkkernel): started before the ingest (on a new venv it writes their bytecode meanwhile), ended
# with this recipe; the kernelspec in $(REPORTS)/.kernel, first on JUPYTER_PATH, points papermill's python3
# kernels at it.  FORK_KERNELS=no: every kernel a new process, as `make $(REPORTS)/NN-….ipynb` alone does.
FORK_KERNELS ?= yes
# One `make report` at a time per REPORTS: a second one (they would race on the same temp notebooks and page)
# exits 2 at once, saying so.  The lock is fd 9 on $(REPORTS)/.lock (flock, util-linux), held by this recipe
# and its children until the last ends; the kernel server does not take it (9>&-), so no kernel outlives it.
report:
	@mkdir -p $(REPORTS) && exec 9>>"$(REPORTS)/.lock" && if ! flock -n 9; then \
	    echo "another make report is running on $(REPORTS) ($(REPORTS)/.lock is locked): nothing done, exit 2" >&2; \
	    exit 2; fi; \
	  start=$$EPOCHREALTIME; \
	  $(MAKE) --no-print-directory .venv/.installed && \
	  sock="$${TMPDIR:-/tmp}/cephqos-kernels-$$$$.sock"; kernels=""; \
	  if [ "$(FORK_KERNELS)" = yes ]; then \
	    $(PY) -m analysis.forkkernel kernelspec "$(abspath $(REPORTS))/.kernel" "$(abspath $(PY))" >/dev/null && \
	    { $(PY) -m analysis.forkkernel serve "$$sock" 9>&- & srv=$$!; \
	      trap 'kill $$srv 2>/dev/null; rm -f "$$sock" "$$sock.starting"' EXIT; } && \
	    kernels="CEPHQOS_FORK_SERVER=$$sock JUPYTER_PATH=$(abspath $(REPORTS))/.kernel$${JUPYTER_PATH:+:$$JUPYTER_PATH}"; fi; \
	  $(MAKE) --no-print-directory $(PROC)/tables.json && \
	  $(MAKE) --no-print-directory TABLES_CHECKED=yes $(PROC)/notebooks.mk && \
	  echo "notebooks and claims, $(REPORT_JOBS) at a time$${kernels:+, kernels forked from one warm process}:" && \
	  env $$kernels $(MAKE) --no-print-directory TABLES_CHECKED=yes -j$(REPORT_JOBS) $(REPORTS)/claims.csv $(REPORT_NB:%=$(REPORTS)/%.ipynb) && \
	  t=$$EPOCHREALTIME && $(PY) -m analysis report $(REPORTS) --figures $(FIGURES) --processed $(PROC) >/dev/null && \
	  printf '  %-28s %6.1f s\n' "the page" "$$(echo "$$EPOCHREALTIME $$t" | awk '{print $$1 - $$2}')" && \
	  printf 'report: %s\n' $(abspath $(REPORTS)/report.html) && \
	  printf 'make report: %.1f s wall time\n' "$$(echo "$$EPOCHREALTIME $$start" | awk '{print $$1 - $$2}')" && \
	  $(PY) -m analysis failures --processed $(PROC)
.PRECIOUS: $(REPORTS)/%.ipynb

# the same page printed by headless Chromium (A4; figures and table rows not cut across pages)
report-pdf: report
	$(PY) -m analysis.pagecheck --pdf $(REPORTS)/report.pdf $(REPORTS)/report.html

# --- tests: unit, conformance (../shared/corpus), fuzzing, live fio, nbval on the notebooks ---------
# the notebooks read the processed tables (never raw data behind their back): `data` builds them once
# then the reader and ingest tests once more with the C part off (CEPHQOS_NATIVE=0): the plain path gives the
# same tables and errors (tests of the C part itself skip there)
READER_TESTS := $(addsuffix .py,$(addprefix tests/test_,any_data base blktrace blktrace_stream cbt_archive ceph_timeline compress \
  damage fio_bins fio_grid fio_json fio_log fio_log_stream fio_workload fuzz getput ingest_faults keys native \
  radosbench radosbench_conformance scale scan sysutil sysutil_fast tables validate walk))
test: .venv/.installed .venv/.native tools data
	$(PY) -m ruff check --quiet .
	$(PY) -m pytest -q tests --nbval-lax notebooks/00-ingest.ipynb notebooks/10-consistency.ipynb notebooks/15-compare.ipynb notebooks/20-io-schedulers.ipynb notebooks/30-qos-study.ipynb notebooks/32-qos-campaign.ipynb notebooks/33-qos-v2.ipynb notebooks/35-versions.ipynb notebooks/40-block-workload.ipynb notebooks/50-rgw.ipynb notebooks/60-history.ipynb --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider
	CEPHQOS_NATIVE=0 $(PY) -m pytest -q -p no:cacheprovider $(READER_TESTS)

# Jupyter refuses to start as root unless told (the README's Debian VM is root): --allow-root then only
lab: .venv/.installed
	$(PY) -m jupyter lab --notebook-dir=. $$([ "$$(id -u)" = 0 ] && echo --allow-root)

# the parser benchmarks (bench_ingest: fio2gnuplot, pandas, wc -l; bench_blktrace: blkparse, btt) and the
# scale part (bench_scale: a ≥ 5 GB corpus of copied real captures in /var/tmp/cephqos-scale, built once;
# one process vs --dask --workers 1 and 2), one table → $(BENCH_OUT).  Run it alone on the machine.
BENCH_OUT ?= reports/bench.md
bench: .venv/.installed .venv/.native tools
	$(PY) bench/bench_scale.py --with-parsers --out $(BENCH_OUT) $(BENCH_ARGS)
	$(PY) bench/bench_native.py --out $(dir $(BENCH_OUT))bench-native.md
	$(PY) bench/bench_history.py --out $(dir $(BENCH_OUT))bench-history.md

# --- capture: WPQ-vs-mClock campaigns on a throwaway local Ceph 16.2 cluster (root, Debian's ceph) ---
# Not $(PY)-bound: the driver needs only PyYAML (Debian's /usr/bin/python3 when it has it), and the
# harness itself starts everything that imports the rados/rbd bindings (pgpoll.py, objfill.py) under
# /usr/bin/python3, the only interpreter where they import.  It installs the Debian packages if they
# are missing.  Run it alone on the machine (no tests, builds or helpers beside it); CI never does.
CAPTURE_PY   ?= $(shell /usr/bin/python3 -c 'import yaml' 2>/dev/null && echo /usr/bin/python3 || echo $(PY))
CAPTURE_ARGS ?=
.PHONY: capture-smoke capture-qos capture-pilot pilot-verdict
SMOKE ?= capture/campaigns/smoke.yaml   # capture/campaigns/reef-smoke.yaml: the same on Reef (make ceph-reef)
# one short run per scenario, end to end (~8 min); output to a temp dir, not a data set
capture-smoke:
	@[ "$$(id -u)" = 0 ] || { echo "capture-smoke needs root: sudo make capture-smoke"; exit 1; }
	out=$$(mktemp -d /tmp/cephqos-smoke.XXXXXX) && echo "capture-smoke: output in $$out" && \
	  $(CAPTURE_PY) -m capture.ceph run $(SMOKE) --out "$$out" $(CAPTURE_ARGS)
# a campaign (qos-2026: 103 runs, ~3.3 h measured here; resumable: CAPTURE_ARGS="--max-minutes 110" per
# sitting).  A throttled campaign (qos-v2) is refused until its pilot said go (CAPTURE_ARGS=--force runs
# it anyway, marked forced in every run.json).
CAMPAIGN ?= capture/campaigns/qos-2026.yaml
CAMPAIGN_NAME = $(shell sed -n 's/^campaign: *//p' $(CAMPAIGN))
capture-qos:
	@[ "$$(id -u)" = 0 ] || { echo "capture-qos needs root: sudo make capture-qos"; exit 1; }
	$(CAPTURE_PY) -m capture.ceph run $(CAMPAIGN) --out $(DATA)/ceph-qos $(CAPTURE_ARGS)
	-chown -R --reference=$(CURDIR) $(DATA)/ceph-qos
	@echo "capture-qos: now refresh the manifest with make manifest (as the repository's owner)"

# the pilot of a campaign: two arms per scenario once after a discarded warm-up (data in
# $(DATA)/ceph-qos/<campaign>-pilot), then the verdict: go / no-go per scenario, pool sizes for 60–150 s
# operations, the repeats for power 0.8 and the campaign's machine time → <campaign>/pilot.json
# A redesigned scenario is piloted again in a later round: PILOT_ARGS="--round 2 --scenarios scrub"; the
# verdict reads every round and decides each scenario on its latest.
PILOT_ARGS ?=
# the finished campaign whose run-to-run spread sets the repeats: one of the same regime (a throttled
# campaign: qos-v2; unthrottled: qos-2026); `analysis pilot` refuses a spread from another regime
PILOT_SPREAD ?= $(if $(shell grep -qs '^throttle:' $(CAMPAIGN) && echo y),$(DATA)/ceph-qos/qos-v2,$(DATA)/ceph-qos/qos-2026)
capture-pilot: .venv/.installed
	@[ "$$(id -u)" = 0 ] || { echo "capture-pilot needs root: sudo make capture-pilot CAMPAIGN=..."; exit 1; }
	$(CAPTURE_PY) -m capture.ceph pilot $(CAMPAIGN) --out $(DATA)/ceph-qos $(PILOT_ARGS) $(CAPTURE_ARGS)
	$(MAKE) --no-print-directory pilot-verdict
# the verdict alone, from the pilot data already captured (no root, no Ceph)
pilot-verdict: .venv/.installed
	$(PY) -m analysis pilot $(sort $(wildcard $(DATA)/ceph-qos/$(CAMPAIGN_NAME)-pilot $(DATA)/ceph-qos/$(CAMPAIGN_NAME)-pilot-r*)) --campaign-file $(CAMPAIGN) \
	  --spread-from $(PILOT_SPREAD) --out $(DATA)/ceph-qos/$(CAMPAIGN_NAME)/pilot.json
	-chown -R --reference=$(CURDIR) $(DATA)/ceph-qos

# --- CBT (../shared/tools/cbt, unmodified) run for real against this cluster (root; issue 25) ---
# librbdfio + radosbench, one CBT archive per arm (data/raw/cbt/<campaign>/<arm>/results/…, gzipped file
# by file) and the harness's record beside it (harness/<arm>/).  Pilot first: every pilot arm twice, then
# the verdict (queue, CPU, iterations for power 0.8) → <campaign>/pilot.json; the campaign runs its pair
# of arms × those iterations.  Run it alone on the machine.
CBT_CAMPAIGN ?= capture/campaigns/cbt-2026.yaml
CBT_NAME = $(shell sed -n 's/^campaign: *//p' $(CBT_CAMPAIGN))
.PHONY: capture-cbt-pilot cbt-pilot-verdict capture-cbt
capture-cbt-pilot: .venv/.installed
	@[ "$$(id -u)" = 0 ] || { echo "capture-cbt-pilot needs root: sudo make capture-cbt-pilot"; exit 1; }
	$(CAPTURE_PY) -m capture.cbt pilot $(CBT_CAMPAIGN) --out $(DATA)/cbt $(CAPTURE_ARGS)
	-chown -R --reference=$(CURDIR) $(DATA)/cbt
	$(MAKE) --no-print-directory cbt-pilot-verdict
cbt-pilot-verdict: .venv/.installed
	$(PY) -m analysis cbt-pilot $(DATA)/cbt/$(CBT_NAME)-pilot --campaign-file $(CBT_CAMPAIGN) \
	  --out $(DATA)/cbt/$(CBT_NAME)/pilot.json
	-chown -R --reference=$(CURDIR) $(DATA)/cbt
# fio-plot's bench_fio layout, captured here: randread/randwrite × iodepth 1–64 × numjobs 1, 2, 4 on two loop
# devices (over a disk file, over /dev/shm), numjobs 1 twice (run-1/, run-2/), the rest once; a pilot first,
# whose NO-GO stops it.  Root, fio, ~8 min; run it alone on the machine.  (capture/fio_grid, data/raw/fio-grid)
FIO_GRID ?= $(DATA)/fio-grid
capture-fio-grid: .venv/.installed tools
	$(PY) -m capture.fio_grid pilot $(FIO_GRID)-pilot
	$(PY) -m capture.fio_grid run $(FIO_GRID) --pilot $(FIO_GRID)-pilot/pilot.json
	$(PY) -m analysis manifest $(DATA)

capture-cbt:
	@[ "$$(id -u)" = 0 ] || { echo "capture-cbt needs root: sudo make capture-cbt"; exit 1; }
	$(CAPTURE_PY) -m capture.cbt run $(CBT_CAMPAIGN) --out $(DATA)/cbt $(CAPTURE_ARGS)
	-chown -R --reference=$(CURDIR) $(DATA)/cbt
	@echo "capture-cbt: now refresh the manifest with make manifest (as the repository's owner)"

# --- RGW: radosgw on this cluster, bucket-index sharding vs rados bench (root; issue 28) ---
# The load generator (capture/rgw/loadgen.py, Debian's python3-boto3) prints getput's lines, so the
# project's getput reader reads them.  Smoke: every arm kind once, a few seconds each (~2 min; temp dir).
# Pilot: the campaign's arms twice → <campaign>-pilot/pilot-verdict.json (index ops queued? CPU
# saturated? repeats for power 0.8).  Run them alone on the machine.
RGW_CAMPAIGN ?= capture/campaigns/rgw-2026.yaml
.PHONY: capture-rgw-smoke capture-rgw-pilot capture-rgw
capture-rgw-smoke:
	@[ "$$(id -u)" = 0 ] || { echo "capture-rgw-smoke needs root: sudo make capture-rgw-smoke"; exit 1; }
	out=$$(mktemp -d /tmp/cephqos-rgw-smoke.XXXXXX) && echo "capture-rgw-smoke: output in $$out" && \
	  $(CAPTURE_PY) -m capture.rgw run capture/campaigns/rgw-smoke.yaml --out "$$out" $(CAPTURE_ARGS)
capture-rgw-pilot:
	@[ "$$(id -u)" = 0 ] || { echo "capture-rgw-pilot needs root: sudo make capture-rgw-pilot"; exit 1; }
	$(CAPTURE_PY) -m capture.rgw pilot $(RGW_CAMPAIGN) --out $(DATA)/rgw $(CAPTURE_ARGS)
	-chown -R --reference=$(CURDIR) $(DATA)/rgw
capture-rgw:
	@[ "$$(id -u)" = 0 ] || { echo "capture-rgw needs root: sudo make capture-rgw"; exit 1; }
	$(CAPTURE_PY) -m capture.rgw run $(RGW_CAMPAIGN) --out $(DATA)/rgw $(CAPTURE_ARGS)
	-chown -R --reference=$(CURDIR) $(DATA)/rgw
	@echo "capture-rgw: now refresh the manifest with make manifest (as the repository's owner)"
# CBT's own getput benchmark (../shared/tools/cbt, unmodified) against the same radosgw, capture/rgw/getput-shim as
# getput (capture/rgw/cbt.py): one CBT invocation per arm, the campaign's repeats as CBT's iterations →
# $(DATA)/rgw/<campaign>/<arm>/results/… (CBT's archive, gzipped file by file) and harness/<arm>/.  Smoke: 1
# iteration of 10 s into a temp dir (~4 min).  Run them alone on the machine.
RGW_CBT_CAMPAIGN ?= capture/campaigns/rgw-cbt-2026.yaml
.PHONY: capture-rgw-cbt-smoke capture-rgw-cbt
capture-rgw-cbt-smoke:
	@[ "$$(id -u)" = 0 ] || { echo "capture-rgw-cbt-smoke needs root: sudo make capture-rgw-cbt-smoke"; exit 1; }
	out=$$(mktemp -d /tmp/cephqos-rgw-cbt-smoke.XXXXXX) && echo "capture-rgw-cbt-smoke: output in $$out" && \
	  $(CAPTURE_PY) -m capture.rgw cbt capture/campaigns/rgw-cbt-smoke.yaml --out "$$out" $(CAPTURE_ARGS)
capture-rgw-cbt:
	@[ "$$(id -u)" = 0 ] || { echo "capture-rgw-cbt needs root: sudo make capture-rgw-cbt"; exit 1; }
	$(CAPTURE_PY) -m capture.rgw cbt $(RGW_CBT_CAMPAIGN) --out $(DATA)/rgw $(CAPTURE_ARGS)
	-chown -R --reference=$(CURDIR) $(DATA)/rgw
	@echo "capture-rgw-cbt: now refresh the manifest with make manifest (as the repository's owner)"

# --- Ceph 18.2 (Reef) from Debian 13 in a debootstrap chroot beside the host's Pacific (issue 24) ---
# Idempotent; prints the chroot's size and this build's time.  REEF_ROOT is where it lives.
REEF_ROOT ?= /var/tmp/cephqos-reef-root
.PHONY: ceph-reef ceph-reef-clean
ceph-reef:
	@[ "$$(id -u)" = 0 ] || { echo "ceph-reef needs root: sudo make ceph-reef"; exit 1; }
	/usr/bin/python3 -m capture.ceph.chroot build --root $(REEF_ROOT)
ceph-reef-clean:
	@[ "$$(id -u)" = 0 ] || { echo "ceph-reef-clean needs root: sudo make ceph-reef-clean"; exit 1; }
	/usr/bin/python3 -m capture.ceph.chroot clean --root $(REEF_ROOT)

# --- capture: benchmark histories with changes made at known points (root; issue 52) ---
# four histories × 40 points × 3 fio runs on a loop device under a cgroup blkio read-IOPS cap (~25 min,
# after a pilot that refuses when the cap does not bind); output data/raw/history/<campaign>
HISTORY_CAMPAIGN ?= capture/campaigns/history-2026.yaml
.PHONY: capture-history
capture-history:
	@[ "$$(id -u)" = 0 ] || { echo "capture-history needs root: sudo make capture-history"; exit 1; }
	$(CAPTURE_PY) -m capture.history run $(HISTORY_CAMPAIGN) --out $(DATA)/history $(CAPTURE_ARGS)
	-chown -R --reference=$(CURDIR) $(DATA)/history
	@echo "capture-history: now refresh the manifest with make manifest (as the repository's owner)"

# --- capture: IO-scheduler campaigns with fio on loop devices and file systems (root; issue 4) ---
.PHONY: capture-block-smoke capture-block capture-rados-block-smoke capture-rados-block
# every scheduler on a few cells, one traced (~3 min); output to a temp dir, not a data set
capture-block-smoke:
	@[ "$$(id -u)" = 0 ] || { echo "capture-block-smoke needs root: sudo make capture-block-smoke"; exit 1; }
	out=$$(mktemp -d /tmp/cephqos-block-smoke.XXXXXX) && echo "capture-block-smoke: output in $$out" && \
	  $(CAPTURE_PY) -m capture.block run capture/campaigns/block-smoke.yaml --out "$$out" $(CAPTURE_ARGS)
capture-block:
	@[ "$$(id -u)" = 0 ] || { echo "capture-block needs root: sudo make capture-block"; exit 1; }
	$(CAPTURE_PY) -m capture.block run capture/campaigns/block-2026.yaml --out $(DATA)/block $(CAPTURE_ARGS)
	-chown -R --reference=$(CURDIR) $(DATA)/block
	@echo "capture-block: now refresh the manifest with make manifest (as the repository's owner)"
# rados bench on 2 OSDs on loop devices, every scheduler, 2 cells, one traced (~3 min); temp output
capture-rados-block-smoke:
	@[ "$$(id -u)" = 0 ] || { echo "capture-rados-block-smoke needs root: sudo make capture-rados-block-smoke"; exit 1; }
	out=$$(mktemp -d /tmp/cephqos-rados-block-smoke.XXXXXX) && echo "capture-rados-block-smoke: output in $$out" && \
	  $(CAPTURE_PY) -m capture.block run capture/campaigns/rados-block-smoke.yaml --out "$$out" $(CAPTURE_ARGS)
capture-rados-block:
	@[ "$$(id -u)" = 0 ] || { echo "capture-rados-block needs root: sudo make capture-rados-block"; exit 1; }
	$(CAPTURE_PY) -m capture.block run capture/campaigns/rados-block-2026.yaml --out $(DATA)/block $(CAPTURE_ARGS)
	-chown -R --reference=$(CURDIR) $(DATA)/block
	@echo "capture-rados-block: now refresh the manifest with make manifest (as the repository's owner)"

clean:
	rm -rf $(PROC)/*.parquet $(PROC)/tables.json $(PROC)/summary $(PROC)/series $(PROC)/blk_requests $(PROC)/campaigns $(PROC)/notebooks.mk $(PROC)/data-dir.txt reports/*.html reports/*.ipynb reports/dataset.txt figures/*.png figures/*.svg
