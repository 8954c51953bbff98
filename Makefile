.PHONY: setup test test-fast lint typecheck bench

setup:
	bash scripts/setup.sh dev

test:
	.venv/bin/python -m pytest

test-fast:
	.venv/bin/python -m pytest -m "not integration"

lint:
	.venv/bin/ruff check src tests benchmarks
	.venv/bin/ruff format --check src tests benchmarks

typecheck:
	.venv/bin/mypy

bench:
	.venv/bin/python benchmarks/retrieval_latency.py --index index/bnwiki
