"""``kbqa serve``: a chat page in the browser, served on 127.0.0.1 (:mod:`kbqa.serve.app`)."""
