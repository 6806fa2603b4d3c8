"""Index DDL: create, alter the properties of, and drop a collection's indexes.

An index is a catalog entry (``rootcoord/index/<collection>/<name>``: field,
name, id, params); query nodes build it per segment (``data/index_builds.py``)
and ``describe_index`` counts how far (``data/index_progress.py``). Each change
takes the DDL lock, so a create and an alter of one index do not interleave.

As in Milvus (datacoord's ``CreateIndex`` / ``AlterIndex`` / ``DropIndex``):

* creating an index that exists with the same definition is a no-op, and
  one that differs is refused (one index per field, but a JSON field has one
  per ``json_path``, each under its own name); the definition leaves
  the properties out (``common/index_properties.py``), and properties given
  to a repeated create replace the stored ones;
* altering (``alter_index_properties``, ``drop_index_properties``) changes only
  properties, of a released collection, of an index named exactly;
* dropping matches by index name only (no name: the collection's one index),
  of a released collection; a name that matches nothing drops nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import structlog

from common.errors import CollectionLoaded, ErrorCode, IndexDuplicate, IndexNotFound, InvalidArgument, StrataError
from common.index_properties import check_values, without_properties
from coordinator.catalog import Catalog, CollectionMeta, IndexMeta
from coordinator.idalloc import IDAllocator
from segcore.index.scalar.spec import flat_params


def _json_path(params: Mapping[str, str]) -> str | None:
    """The JSON path a JSON index covers (``None``: not a JSON path index)."""
    return flat_params(params).get("json_path") or None


class IndexDDL:
    def __init__(
        self, catalog: Catalog, ids: IDAllocator, lock: asyncio.Lock, is_loaded: Callable[[int], bool]
    ) -> None:
        self._catalog = catalog
        self._ids = ids
        self._lock = lock  # the collection DDL's: one DDL at a time
        self._is_loaded = is_loaded
        self._log = structlog.get_logger().bind(component="ddl")

    async def create(self, meta: CollectionMeta, field_name: str, index_name: str, params: dict[str, str]) -> None:
        if not meta.schema.has_field(field_name):
            raise InvalidArgument(f"cannot create index on non-exist field: {field_name}")
        check_values(params)
        name = index_name or field_name
        async with self._lock:
            for existing in await self._catalog.list_indexes(meta.collection_id):
                if existing.field_name != field_name and existing.index_name != name:
                    continue
                if existing.index_name != name and _json_path(existing.params) != _json_path(params):
                    continue  # another path of the same JSON field: its own index (Milvus 2.6)
                if existing.field_name == field_name and without_properties(existing.params) == without_properties(
                    params
                ):
                    merged = {**existing.params, **params}
                    if merged != existing.params:  # the same index, new properties
                        await self._catalog.save_index(replace(existing, params=merged))
                    return
                raise InvalidArgument(
                    f"at most one distinct index is allowed per field: field {field_name} already has "
                    f"index {existing.index_name} with different params"
                )
            index_id = await self._ids.allocate()
            await self._catalog.save_index(
                IndexMeta(
                    collection_id=meta.collection_id,
                    field_name=field_name,
                    index_name=name,
                    index_id=index_id,
                    params=params,
                )
            )
        self._log.info("index created", collection_id=meta.collection_id, index=name, index_id=index_id)

    async def alter(
        self, meta: CollectionMeta, index_name: str, params: Mapping[str, str], delete_keys: Sequence[str]
    ) -> None:
        """Set ``params`` or remove ``delete_keys`` (properties only: the proxy checks the keys).

        Raises:
            InvalidArgument: no index name, both params and keys, a value that is not of its key.
            CollectionLoaded: the collection is loaded (Milvus alters a released one only).
            IndexNotFound: no index has that name.
        """
        if not index_name:
            raise InvalidArgument("index name is empty: invalid parameter")
        if self._is_loaded(meta.collection_id):
            raise CollectionLoaded(
                "can't alter index on loaded collection, please release the collection first: "
                f"collection already loaded[collection={meta.name}]"
            )
        async with self._lock:
            index = next((i for i in await self._catalog.list_indexes(meta.collection_id)
                          if i.index_name == index_name), None)
            if index is None:
                raise IndexNotFound(f"index not found[indexName={index_name}]")
            if params and delete_keys:
                raise InvalidArgument("cannot provide both DeleteKeys and ExtraParams: invalid parameter")
            check_values(params)
            changed = {k: v for k, v in {**index.params, **params}.items() if k not in delete_keys}
            if changed != index.params:
                await self._catalog.save_index(replace(index, params=changed))
        self._log.info("index altered", collection_id=meta.collection_id, index=index_name,
                       params=dict(params), deleted=list(delete_keys))

    async def drop(self, meta: CollectionMeta, index_name: str) -> None:
        """Drop the index named ``index_name`` (empty: the collection's only index).

        Raises:
            StrataError: REFUSED while the collection is loaded.
            IndexDuplicate: no name and more than one index.
        """
        if self._is_loaded(meta.collection_id):
            raise StrataError("index cannot be dropped, collection is loaded, please release it first",
                              ErrorCode.REFUSED)
        async with self._lock:
            indexes = [i for i in await self._catalog.list_indexes(meta.collection_id)
                       if not index_name or i.index_name == index_name]
            if len(indexes) > 1:
                raise IndexDuplicate(f"index duplicates[indexName={index_name}]")
            for index in indexes:
                await self._catalog.drop_index(index)
                self._log.info("index dropped", collection_id=meta.collection_id, index=index.index_name)

