# The two commands of the README. Each sets up everything it needs first (scripts/setup.sh).
.PHONY: setup watch test bench screenshots

setup:
	@./scripts/setup.sh

watch: setup
	.venv/bin/kvtui watch

test: setup
	.venv/bin/python -m pytest -q

bench: setup
	.venv/bin/kvtui bench --json bench.json
