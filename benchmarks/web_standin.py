"""Write a local stand-in for web search: a fixed JSON "web" of ``n`` results, the opening
``chars`` characters of ``n`` documents drawn at random (``--seed``) from a knowledge base, for
``--web-search static:PATH`` (:class:`kbqa.web_search.StaticWebSearch`, which returns the
first results sharing a word with the query). It serves the same few results to almost every
question, so it measures what the web stage does with results that do not hold the answer.

    python benchmarks/web_standin.py --kb ../shared/data/bn/bnwiki_kb.jsonl --out web.json

Nothing leaves the machine; the file is written outside the repository by the caller.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from kbqa.corpus.loaders import read_jsonl_objects
from kbqa.errors import KBQAError


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--kb", required=True, type=Path, help="JSONL knowledge base (doc_id, title, text)"
    )
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--chars", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.n <= 0 or args.chars <= 0:
        raise SystemExit(f"error: --n and --chars must be > 0, got {args.n} and {args.chars}")
    try:
        docs = [obj for _, obj in read_jsonl_objects(args.kb) if isinstance(obj, dict)]
    except KBQAError as exc:
        raise SystemExit(f"error: {exc}") from None
    if not docs:
        raise SystemExit(f"error: {args.kb} holds no JSON object (one document per line)")
    picked = random.Random(args.seed).sample(docs, min(args.n, len(docs)))
    results = [
        {
            "title": str(d.get("title", "")),
            "url": str(d.get("url") or f"https://standin.invalid/{d.get('doc_id', i)}"),
            "snippet": str(d.get("text", ""))[: args.chars],
        }
        for i, d in enumerate(picked)
    ]
    try:
        args.out.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    except OSError as exc:
        raise SystemExit(f"error: cannot write {args.out}: {exc.strerror or exc}") from None
    print(f"{len(results)} results from {args.kb} written to {args.out}")


if __name__ == "__main__":
    main()
