"""The answer logic, free of LangGraph: every rule a node applies to a question or an answer,
unit-testable without an index or a graph.

- :mod:`~kbqa.answers.language`: the question's language and type;
- :mod:`~kbqa.answers.reading`: the reader's prompt fitted to its window, and a generation
  that stops once it is settled as an abstention;
- :mod:`~kbqa.answers.abstention`: is an output an answer or an abstention;
- :mod:`~kbqa.answers.cleanup`: the answer line out of a raw output, and the final short span;
- :mod:`~kbqa.answers.snap`: the context's own span and spelling of an answer;
- :mod:`~kbqa.answers.normalize`: answer normalisation and answer-in-context (the metrics use
  them too);
- :mod:`~kbqa.answers.extract` (with :mod:`~kbqa.answers.patterns` and
  :mod:`~kbqa.answers.aligned`): the pattern extractor, the graph's reader without an LLM;
- :mod:`~kbqa.answers.cross_check`: when the extractor overrules the reader;
- :mod:`~kbqa.answers.web_query`: a question's key entities, as a web search query.
"""
