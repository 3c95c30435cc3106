"""The LLM editors: OpenAI and Anthropic backends over one conversation and tool loop."""
