"""An OpenAI-compatible server's address (``--llm-url``) and the models it lists. Kept apart from
:mod:`kbqa.llm.server`, so that checking the setting imports httpx alone, not LangChain."""

from __future__ import annotations

import httpx

from kbqa.errors import ModelError


def check_llm_url(url: str) -> None:
    """Raises ValueError unless ``url`` is an ``http(s)://HOST:PORT/...`` base URL."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"llm_url {url!r} is not a URL ({exc})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(
            f"llm_url must be an http(s) URL of an OpenAI-compatible server, such as "
            f"http://127.0.0.1:8000/v1; got {url!r}"
        )


def served_models(url: str, timeout: float = 10.0) -> list[str]:
    """The model names an OpenAI-compatible server lists at ``{url}/models``.

    Raises:
        ModelError: The server cannot be reached, answers with an HTTP error (a 404 says the
            URL may lack ``/v1``), or does not answer as an OpenAI-compatible server.
    """
    try:
        response = httpx.get(url.rstrip("/") + "/models", timeout=timeout)
        response.raise_for_status()
        return [str(m["id"]) for m in response.json()["data"]]
    except httpx.HTTPStatusError as exc:
        code = exc.response.status_code
        hint = "; does the URL need to end in /v1?" if code == 404 else ""
        raise ModelError(f"the LLM server at {url} answered {code} at /models{hint}") from None
    except httpx.HTTPError as exc:
        raise ModelError(f"the LLM server at {url} cannot be reached ({exc})") from None
    except (ValueError, KeyError, TypeError):
        raise ModelError(
            f"{url}/models did not answer as an OpenAI-compatible server; give the base URL "
            "that ends in /v1"
        ) from None
