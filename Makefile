# The two commands of the README. Each sets up everything it needs first (scripts/setup.sh).
.PHONY: setup setup-test watch test bench docs examples screenshots demo-gif

setup:
	@./scripts/setup.sh

setup-test:
	@./scripts/setup.sh --test

watch: setup
	.venv/bin/kvtui watch

# two test processes, a whole file each (--dist loadfile): most tests wait on real Mooncake processes
test: setup-test
	.venv/bin/python -m pytest -q -n 2 --dist loadfile

# The documentation site: the reference pages regenerated from the code, the examples' snippets from their kept
# runs (`make examples` runs them again), then the site built into site/.
docs: setup-test
	.venv/bin/python scripts/gen_reference.py
	.venv/bin/python scripts/gen_examples.py --render
	.venv/bin/mkdocs build --strict

# Every example of kvtui's output the docs show, run again for real (a few minutes): docs/examples/*.txt and their
# transcripts (scripts/gen_examples.py; tests/unit/test_doc_examples.py checks them against the code).
examples: setup-test
	.venv/bin/python scripts/gen_examples.py

bench: setup
	.venv/bin/kvtui bench --json bench.json

screenshots: setup-test
	.venv/bin/kvtui watch --headless --duration 10 --size 120x40 --layout tiny --screenshot screenshots/watch-120x40.svg
	.venv/bin/kvtui watch --headless --duration 10 --size 80x24 --layout tiny --screenshot screenshots/watch-80x24.svg
	.venv/bin/kvtui watch --headless --duration 10 --size 200x60 --layout tiny --screenshot screenshots/watch-200x60.svg
	.venv/bin/kvtui watch --headless --duration 10 --size 200x60 --layout tiny --hosts auto --link 1gbit \
	  --screenshot screenshots/watch-hosts-200x60.svg
	.venv/bin/kvtui watch --headless --duration 10 --size 120x40 --layout tiny --decode-workers 3 --prefill-workers 2 \
	  --segment-on decode --route prefix-affinity --screenshot screenshots/watch-workers-120x40.svg
	.venv/bin/kvtui watch --headless --duration 20 --size 120x40 --layout tiny --disk-size 256MiB --store-size 32MiB \
	  --pool 256 --prompt-tokens 512 --screenshot screenshots/watch-disk-120x40.svg
	.venv/bin/kvtui watch --headless --duration 15 --size 120x40 --layout tiny --replicate-hot --segment-on decode \
	  --decode-workers 2 --screenshot screenshots/watch-hot-120x40.svg
	rm -f /tmp/kvtui-trace-shot.kvtui /tmp/kvtui-trace-shot.kvtui-wal
	.venv/bin/kvtui watch --headless --duration 25 --size 120x40 --trace synthetic --speed 16 --layers 1 --kv-heads 1 \
	  --head-dim 1 --elem-bytes 1 --page-tokens 512 --store-size 16MiB --record /tmp/kvtui-trace-shot.kvtui \
	  --screenshot screenshots/trace-120x40.svg
	.venv/bin/kvtui replay /tmp/kvtui-trace-shot.kvtui --headless --duration 4 --speed 4 --size 120x40 \
	  --screenshot screenshots/replay-120x40.svg
	.venv/bin/kvtui serve --layout tiny --prompt-tokens 256 --port 8731 & pid=$$!; \
	  .venv/bin/python scripts/browser_check.py http://127.0.0.1:8731/ --png screenshots/serve-browser.png \
	    --size 1280x720 --settle 8 --timeout 60 >/dev/null; rc=$$?; kill $$pid; wait $$pid; exit $$rc

# The README's GIF: a real 18 s run whose overlap is changed live (75 % → 25 % → 95 %), then kvtui export.
demo-gif: setup-test
	rm -f /tmp/kvtui-demo.kvtui
	.venv/bin/python scripts/record_demo.py /tmp/kvtui-demo.kvtui
	.venv/bin/kvtui export /tmp/kvtui-demo.kvtui --gif screenshots/demo.gif --size 120x40 --speed 2 --from 1 --annotate --gif-width 960
