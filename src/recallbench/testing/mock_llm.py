"""The shipped mock provider, as test code imports it: the module
:mod:`recallbench.llm.mock` itself (it lives in the ``llm`` layer so that ``--reader mock`` /
``--judge mock-judge`` can start it from the pipeline without the pipeline importing the test
doubles). ``python -m recallbench.testing.mock_llm`` serves it from a shell."""

import sys

from recallbench.benchmarks.mock_shapes import all_shapes
from recallbench.llm import mock

mock.set_shape_provider(all_shapes)

if __name__ == "__main__":
    raise SystemExit(mock.main())
sys.modules[__name__] = mock
