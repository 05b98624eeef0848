"""Chat models behind any OpenAI-compatible endpoint: the types every caller shares
(:mod:`recallbench.llm.types`), the retry policy (:mod:`recallbench.llm.retry`, shared with the
hosted-API systems), the HTTP client (:mod:`recallbench.llm.client`), the SQLite response cache
(:mod:`recallbench.llm.cache`) and the price table (:mod:`recallbench.llm.prices`)."""
