# Benchmarks (bench/README.md). Run `bash scripts/setup.sh` once first; it creates .venv.
PYTHON ?= .venv/bin/python
# Extra arguments for bench.run, e.g. `make bench BENCH_ARGS="--size 200 --repeat 5"`.
BENCH_ARGS ?=

.PHONY: bench bench-smoke

bench:
	@test -x $(PYTHON) || { echo "$(PYTHON) not found: run 'bash scripts/setup.sh' first" >&2; exit 2; }
	$(PYTHON) -m bench.run --server both $(BENCH_ARGS)

# The harness end to end at a tiny size (~10 s): N=3, R=1, 40 pods in 4 gangs. Writes under build/.
bench-smoke:
	@test -x $(PYTHON) || { echo "$(PYTHON) not found: run 'bash scripts/setup.sh' first" >&2; exit 2; }
	mkdir -p build
	$(PYTHON) -m bench.run --size 3 --repeat 1 --lifter-gangs 4 --lifter-pods 40 --release-points 40 --fresh-repeat 2 \
		--out build/BENCHMARKS.smoke.md --json build/bench-smoke.json
