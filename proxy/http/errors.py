"""The RESTful API's errors: Milvus's ``{"code": N, "message": "..."}`` with its HTTP status.

Milvus (``internal/distributed/proxy/httpserver``) answers HTTP 200 with a non-zero ``code`` for
every refused request, except a missing or wrong login (401, code 1800) and a denied privilege
(403, the privilege error's code). The codes of its own (1800-1806) are from ``pkg/util/merr``.
"""

from __future__ import annotations

from common.errors import CODE_TABLE, ErrorCode, StrataError

NEED_AUTHENTICATE = 1800  # merr.ErrNeedAuthenticate
NOT_JSON = 1801  # merr.ErrIncorrectParameterFormat
MISSING_PARAMETER = 1802  # merr.ErrMissingRequiredParameters
INVALID_INSERT_DATA = 1804  # merr.ErrInvalidInsertData

NEED_AUTHENTICATE_MESSAGE = "user hasn't authenticated"
NOT_JSON_MESSAGE = "can only accept json format request"
MISSING_PARAMETER_MESSAGE = "missing required parameters"


class RestError(Exception):
    """A refused request: ``code`` and ``message`` go in the body, ``http_status`` on the response."""

    def __init__(self, code: int, message: str, http_status: int = 200) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status


def missing(name: str) -> RestError:
    return RestError(MISSING_PARAMETER, f"{MISSING_PARAMETER_MESSAGE}, error: `{name}` is required")


def invalid(message: str) -> RestError:
    """A body the API cannot translate (a wrong type, an unknown name): Milvus's parameter error."""
    return RestError(CODE_TABLE[ErrorCode.INVALID_ARGUMENT].milvus_code, message)


def from_strata(err: StrataError) -> RestError:
    info = CODE_TABLE.get(err.code, CODE_TABLE[ErrorCode.UNEXPECTED])
    return RestError(info.milvus_code, err.message)
