"""``eva serve``: the HTTP API for other surfaces (SPEC §10), secure by default.

    app = build_app(services, ServeSettings(port=8765), token)   # eva_api.app: an ASGI app
    serve(services, settings, token)                             # uvicorn, blocking

Who the caller is decides the turn context (SPEC §1), never the request alone:

======================  ==========  ====================================================
token                   audience    turn context
======================  ==========  ====================================================
the owner's             owner       owner / trusted / owner-only (sees private memory)
the owner's + trusted   owner       owner / untrusted / owner-only (withheld footnote)
  = false
the owner's             group       owner / untrusted / group (withheld footnote)
the owner's             public      someone else / untrusted / group (public cut)
none                    any         someone else / untrusted / that audience: no private
                                    memory, the public cut, no memory writes
======================  ==========  ====================================================

Every request goes through one ASGI guard (:class:`eva_api.guard.Guard`) before any endpoint: a
request id, the Host allowlist (421, against DNS rebinding), the Origin check (403; no CORS
unless origins are configured), a per-client rate limit (429) and the body limit (413). Errors
are JSON ``{detail, code, request_id}``. The access log holds method, path (never the query
string: it carries the caller's words), status, time and request id — never memory content
and never the token.

The modules, by what each part is:

- ``guard``: the settings, the checks before any endpoint, and who is calling (the owner's
  token → the turn context);
- ``token``, ``log``: the owner token and the access log, both private files of the data dir;
- ``schemas``: every route and every request body, declared once: the bodies are checked
  and the OpenAPI document is made from the same declarations;
- ``routes``: the endpoints; ``views``: what each caller is shown of a record, a message or a
  night; ``hub``: the chat turns (one at a time) and the sleep schedule; ``events``: a turn's
  events as Server-Sent Events;
- ``protocol``: what the server uses of the runtime (``eva_runtime.services.Services``);
- ``app``: the assembly, uvicorn and its connection limits; ``cli``: ``eva serve``.

Nothing here imports Textual, ``eva_tui`` or ``screens``.
"""
