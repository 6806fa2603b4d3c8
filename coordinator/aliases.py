"""Aliases, renames and collection properties: metadata-only DDL.

An alias is a second name for a collection (``rootcoord/alias/<alias>`` ->
collection id, in the collection's database); every read and write accepts it
where it accepts a collection name, and ``alter_alias`` moves it to another
collection of the same database in one write, which is how users switch traffic
to a rebuilt collection. Names are one namespace per database: an alias cannot
take a collection's name or the other way round. As in Milvus, a collection
with aliases cannot be dropped, nor dropped through an alias.

Renaming moves the name reservation and the collection's name in one etcd
transaction; aliases follow the collection (they point at its id). A rename
into another database (Milvus' ``newDBName``) is refused while it has aliases.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import structlog

from common.errors import ErrorCode, InvalidArgument, StrataError
from common.names import (
    DEFAULT_DATABASE_ID,
    alias_not_found,
    check_alias,
    check_collection_name,
    collection_not_found,
)
from common.timezone import check_timezone
from common.ttl import check_ttl
from coordinator.catalog import Catalog, CollectionMeta


def check_properties(props: dict[str, str]) -> None:
    check_ttl(props)
    check_timezone(props)


class AliasDDL:
    def __init__(self, catalog: Catalog, lock: asyncio.Lock) -> None:
        self._catalog = catalog
        self._lock = lock  # the collection DDL's: one DDL at a time
        self._log = structlog.get_logger().bind(component="ddl")

    async def resolve(self, name: str, db_id: int = DEFAULT_DATABASE_ID) -> int | None:
        """The collection id ``name`` names in database ``db_id``, as a collection name or as an alias."""
        found = await self._catalog.collection_id_by_name(name, db_id)
        return found if found is not None else await self._catalog.alias_target(name, db_id)

    async def aliases_of(self, collection_id: int, db_id: int = DEFAULT_DATABASE_ID) -> list[str]:
        return sorted(a for a, c in (await self._catalog.list_aliases(db_id)).items() if c == collection_id)

    async def _check_free(self, name: str, db_id: int) -> None:
        if await self._catalog.collection_id_by_name(name, db_id) is not None:
            raise InvalidArgument(f"{name} is a collection name: it cannot be used as an alias")

    async def create(self, alias: str, meta: CollectionMeta) -> None:
        check_alias(alias)
        async with self._lock:
            await self._check_free(alias, meta.db_id)
            current = await self._catalog.alias_target(alias, meta.db_id)
            if current is not None:
                if current == meta.collection_id:
                    return
                raise StrataError(
                    f"alias {alias} already exists and points to another collection",
                    ErrorCode.COLLECTION_ALREADY_EXISTS,
                )
            await self._catalog.save_alias(alias, meta.collection_id, meta.db_id)
        self._log.info("alias created", alias=alias, collection=meta.name, db=meta.db_name)

    async def alter(self, alias: str, meta: CollectionMeta) -> None:
        async with self._lock:
            if await self._catalog.alias_target(alias, meta.db_id) is None:
                raise alias_not_found(alias, meta.db_name)
            await self._catalog.save_alias(alias, meta.collection_id, meta.db_id)
        self._log.info("alias altered", alias=alias, collection=meta.name, db=meta.db_name)

    async def drop(self, alias: str, db_id: int = DEFAULT_DATABASE_ID) -> None:
        async with self._lock:
            if await self._catalog.alias_target(alias, db_id) is None:
                return  # dropping an alias that does not exist is a no-op, as in Milvus
            await self._catalog.remove_alias(alias, db_id)
        self._log.info("alias dropped", alias=alias, db_id=db_id)

    async def describe(self, alias: str, db_id: int = DEFAULT_DATABASE_ID, db_name: str = "") -> int:
        target = await self._catalog.alias_target(alias, db_id)
        if target is None:
            raise alias_not_found(alias, db_name)
        return target

    async def check_drop(self, requested: str, meta: CollectionMeta) -> None:
        """Refuse dropping a collection through an alias, or one that still has aliases."""
        if requested and requested != meta.name:
            raise InvalidArgument(f"cannot drop the collection via alias = {requested}")
        aliases = await self.aliases_of(meta.collection_id, meta.db_id)
        if aliases:
            raise InvalidArgument(
                f"unable to drop the collection [{meta.name}] because it has associated aliases {aliases}, "
                "please remove all aliases before dropping the collection"
            )

    async def rename(
        self, meta: CollectionMeta, new_name: str, *, new_db_id: int | None = None, new_db_name: str = ""
    ) -> None:
        """Rename ``meta`` to ``new_name``, in database ``new_db_id`` if given (else its own)."""
        check_collection_name(new_name)
        moving = new_db_id is not None and new_db_id != meta.db_id
        target_db = new_db_id if new_db_id is not None else meta.db_id
        async with self._lock:
            if await self._catalog.alias_target(new_name, target_db) is not None:
                raise InvalidArgument(f"cannot rename collection to an existing alias: {new_name}")
            fresh = await self._catalog.get_collection(meta.collection_id)
            if fresh is None:
                raise collection_not_found(meta.name, meta.db_name)
            if moving and await self.aliases_of(fresh.collection_id, fresh.db_id):
                raise StrataError(  # a plain error in Milvus 2.6 (meta_table.go), code 65535
                    "fail to rename db name, must drop all aliases of this collection before rename", ErrorCode.REFUSED
                )
            renamed = await self._catalog.rename(
                fresh, new_name, db_id=target_db if moving else None, db_name=new_db_name if moving else ""
            )
            if not renamed:
                raise StrataError(f"duplicated new collection name {new_name}", ErrorCode.COLLECTION_ALREADY_EXISTS)
        self._log.info("collection renamed", old=meta.name, new=new_name, db_id=target_db)

    async def alter_properties(self, meta: CollectionMeta, props: dict[str, str], delete_keys: list[str]) -> None:
        check_properties(props)
        async with self._lock:
            fresh = await self._catalog.get_collection(meta.collection_id)
            if fresh is None:
                raise collection_not_found(meta.name, meta.db_name)
            merged = {k: v for k, v in {**fresh.properties, **props}.items() if k not in delete_keys}
            await self._catalog.save_collection(replace(fresh, properties=merged))
        self._log.info("collection properties altered", collection=meta.name, set=sorted(props), deleted=delete_keys)
