"""The JSON body of a request, read with Milvus's names and checks (``request_v2.go``)."""

from __future__ import annotations

from typing import Any

from proxy.http.errors import invalid, missing


class Body:
    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def raw(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def required(self, name: str) -> Any:
        value = self._values.get(name)
        if value is None or value == "" or value == []:
            raise missing(name)
        return value

    def name(self, name: str) -> str:
        """A required string (a collection, index or alias name)."""
        value = self.required(name)
        if not isinstance(value, str):
            raise invalid(f"`{name}` must be a string, got {type(value).__name__}")
        return value

    def text(self, name: str, default: str = "") -> str:
        value = self._values.get(name, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise invalid(f"`{name}` must be a string, got {type(value).__name__}")
        return value

    def integer(self, name: str, default: int) -> int:
        value = self._values.get(name, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise invalid(f"`{name}` must be an integer, got {value!r}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self._values.get(name, default)
        if not isinstance(value, bool):
            raise invalid(f"`{name}` must be true or false, got {value!r}")
        return value

    def strings(self, name: str) -> list[str]:
        value = self._values.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise invalid(f"`{name}` must be a list of strings")
        return value

    def mapping(self, name: str) -> dict[str, Any]:
        value = self._values.get(name) or {}
        if not isinstance(value, dict):
            raise invalid(f"`{name}` must be an object")
        return value
