"""One run of the exec_overhead workload with Pydantic AI: an agent with a `list_dir` tool,
against the benchmark's mock model (its OpenAI base URL in MOCK_URL), until it answers.

Run by `peers.py`, which measures it; not run in CI.
"""

import os
import sys

from pydantic_ai import Agent
from pydantic_ai.usage import UsageLimits
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

model = OpenAIChatModel(
    "m", provider=OpenAIProvider(base_url=os.environ["MOCK_URL"], api_key="not-a-key")
)
agent = Agent(model, instructions="Go")


@agent.tool_plain
def list_dir(path: str) -> list[dict]:
    """List a directory of the workspace."""
    return [
        {"name": entry.name, "type": "dir" if entry.is_dir() else "file"}
        for entry in sorted(os.scandir(path), key=lambda entry: entry.name)
    ]


result = agent.run_sync(
    "Go",
    model_settings={"parallel_tool_calls": False},
    usage_limits=UsageLimits(request_limit=None),
)
if result.output != "done":
    sys.exit(f"unexpected answer: {result.output!r}")
