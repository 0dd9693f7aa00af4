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

screenshots: setup
	.venv/bin/kvtui watch --headless --duration 10 --size 120x40 --layout tiny --prompt-tokens 256 --screenshot screenshots/watch-120x40.svg
	.venv/bin/kvtui watch --headless --duration 10 --size 80x24 --layout tiny --prompt-tokens 256 --screenshot screenshots/watch-80x24.svg
