"""recallbench: an open, neutral harness for the long-term memory of LLM systems."""

__version__ = "0.1.0"
