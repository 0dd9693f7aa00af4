# The two commands of the README. Each sets up everything it needs first (scripts/setup.sh).
.PHONY: setup watch test bench screenshots demo-gif

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

# The README's GIF: a real 18 s run whose overlap is changed live (75 % → 25 % → 95 %), then kvtui export.
demo-gif: setup
	rm -f /tmp/kvtui-demo.kvtui
	.venv/bin/python scripts/record_demo.py /tmp/kvtui-demo.kvtui
	.venv/bin/kvtui export /tmp/kvtui-demo.kvtui --gif screenshots/demo.gif --size 120x40 --speed 2 --annotate --gif-width 960
