"""The API's errors: one JSON shape ``{detail, code, request_id}`` for every refusal, and the
handlers that keep a crash's text (which may quote memory) out of the answer and the log."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

log = logging.getLogger("eva.serve")


class ApiError(HTTPException):
    def __init__(
        self, status: int, detail: str, code: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(status, detail, headers)
        self.code = code


CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    408: "timeout",
    415: "unsupported_media_type",
    421: "misdirected",
    429: "rate_limited",
    500: "internal",
    503: "unavailable",
}


def error_body(status: int, detail: str, code: str | None, request_id: str) -> dict:
    return {"detail": detail, "code": code or CODES.get(status, "error"), "request_id": request_id}


def bad_request(detail: str) -> ApiError:
    return ApiError(400, detail, "bad_request")


def request_id(request: Request) -> str:
    return str(request.scope.get("state", {}).get("request_id", "-"))


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = getattr(exc, "code", None)
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and code is None:
        detail = "no such endpoint"
    if exc.status_code == 405 and code is None:
        detail = "method not allowed for this endpoint"
    return JSONResponse(
        error_body(exc.status_code, detail, code, request_id(request)),
        exc.status_code,
        headers=exc.headers,
    )


async def crash(request: Request, exc: Exception) -> JSONResponse:
    # the exception's text may quote memory: only its type reaches the log
    log.error("request %s failed: %s", request_id(request), type(exc).__name__)
    return JSONResponse(
        error_body(
            500,
            "internal error; see the server log with this request id",
            "internal",
            request_id(request),
        ),
        500,
    )
