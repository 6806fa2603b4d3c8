"""The coordinator's schema-change RPC (mixed into ``CoordinatorService``): AddCollectionField and
AlterCollectionField, carried out by ``schema_ddl.SchemaDDL``."""

from __future__ import annotations

import grpc

from common.errors import InvalidArgument
from common.grpcutil import ok_status, rpc_method
from common.schema import field_from_json
from coordinator.catalog import CollectionMeta
from coordinator.schema_ddl import SchemaDDL
from protos import coordinator_pb2 as pb


class SchemaRPCs:
    """``AlterSchema``: add a field, or alter a field's properties."""

    _schema_ddl: SchemaDDL

    async def _meta(self, ref: pb.CollectionRef) -> CollectionMeta:
        raise NotImplementedError

    @rpc_method(pb.StatusResponse)
    async def AlterSchema(self, request: pb.AlterSchemaRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        meta = await self._meta(request.collection)
        if request.add_field_json:
            try:
                field = field_from_json(request.add_field_json)
            except (ValueError, KeyError, TypeError) as err:
                raise InvalidArgument(f"malformed field schema: {err}") from err
            await self._schema_ddl.add_field(meta, field)
        elif request.field_name:
            await self._schema_ddl.alter_field(
                meta, request.field_name, dict(request.properties), list(request.delete_keys)
            )
        else:
            raise InvalidArgument("AlterSchema needs a field to add or a field name to alter")
        return pb.StatusResponse(status=ok_status())
