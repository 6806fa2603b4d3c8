// The README flow of the official Milvus Node.js SDK against one server; run by tests/e2e/test_node_sdk.py.
//
//   node readme_flow.js 127.0.0.1:19530 COLLECTION
//
// Every step checks its answer; the first wrong one throws, which exits with status 1 and the reason on
// stderr. On success the last line on stdout is a JSON summary the Python test checks again.
'use strict';

const { MilvusClient, DataType, ConsistencyLevelEnum, ErrorCode } = require('@zilliz/milvus2-sdk-node');

const [address, collection] = process.argv.slice(2);
const DIM = 8;
const ROWS = 200;
const TIMEOUT_MS = 60000;

function check(condition, what, answer) {
  if (!condition) {
    throw new Error(`${what}: ${JSON.stringify(answer)}`);
  }
}

function ok(answer, what) {
  const status = answer.status || answer; // some calls answer a bare Status
  check(status.error_code === ErrorCode.SUCCESS, `${what} failed`, status);
  return answer;
}

function vector(i) {
  // Distinct, deterministic vectors: row i is closest to itself.
  return Array.from({ length: DIM }, (_, d) => Math.sin(i * (d + 1)) + d * 0.01);
}

async function main() {
  const client = new MilvusClient({ address, timeout: TIMEOUT_MS });
  await client.connectPromise;
  const summary = {};

  ok(
    await client.createCollection({
      collection_name: collection,
      fields: [
        { name: 'id', data_type: DataType.Int64, is_primary_key: true, autoID: false },
        { name: 'vector', data_type: DataType.FloatVector, dim: DIM },
        { name: 'title', data_type: DataType.VarChar, max_length: 64 },
      ],
    }),
    'createCollection'
  );
  const rows = Array.from({ length: ROWS }, (_, i) => ({ id: i, vector: vector(i), title: `title ${i}` }));
  const inserted = ok(await client.insert({ collection_name: collection, data: rows }), 'insert');
  check(Number(inserted.insert_cnt) === ROWS, 'insert count', inserted);

  const flushed = ok(await client.flushSync({ collection_names: [collection] }), 'flushSync');
  check(flushed.flushed === true, 'flushSync returned unflushed', flushed);
  summary.flushed = flushed.flushed;

  ok(
    await client.createIndex({
      collection_name: collection,
      field_name: 'vector',
      index_type: 'HNSW',
      metric_type: 'L2',
      params: { M: 8, efConstruction: 64 },
    }),
    'createIndex'
  );
  ok(await client.loadCollectionSync({ collection_name: collection }), 'loadCollectionSync');

  const found = ok(
    await client.search({
      collection_name: collection,
      data: [vector(7)],
      limit: 3,
      output_fields: ['id', 'title'],
      consistency_level: ConsistencyLevelEnum.Strong,
    }),
    'search'
  );
  check(found.results.length === 3, 'search hits', found.results);
  check(Number(found.results[0].id) === 7 && found.results[0].title === 'title 7', 'search top hit', found.results);
  summary.search_top_id = Number(found.results[0].id);

  const queried = ok(
    await client.query({
      collection_name: collection,
      filter: 'id in [3, 5, 199]',
      output_fields: ['id', 'title'],
      consistency_level: ConsistencyLevelEnum.Strong,
    }),
    'query'
  );
  const ids = queried.data.map(r => Number(r.id)).sort((a, b) => a - b);
  check(JSON.stringify(ids) === '[3,5,199]', 'query ids', queried.data);
  check(queried.data.every(r => r.title === `title ${r.id}`), 'query titles', queried.data);
  summary.query_ids = ids;

  const counted = ok(
    await client.query({
      collection_name: collection,
      filter: '',
      output_fields: ['count(*)'],
      consistency_level: ConsistencyLevelEnum.Strong,
    }),
    'count'
  );
  summary.count = Number(counted.data[0]['count(*)']);
  check(summary.count === ROWS, 'count(*)', counted.data);

  const described = ok(await client.describeCollection({ collection_name: collection }), 'describeCollection');
  const replicas = ok(await client.getReplicas({ collectionID: described.collectionID }), 'getReplicas');
  check(replicas.replicas.length === 1, 'one replica', replicas);
  check(replicas.replicas[0].shard_replicas.length === described.virtual_channel_names.length, 'shards', replicas);
  summary.replicas = replicas.replicas.length;

  const health = ok(await client.checkHealth(), 'checkHealth');
  check(health.isHealthy === true, 'checkHealth unhealthy', health);
  summary.healthy = health.isHealthy;

  ok(await client.releaseCollection({ collection_name: collection }), 'releaseCollection');
  ok(await client.dropCollection({ collection_name: collection }), 'dropCollection');
  const exists = ok(await client.hasCollection({ collection_name: collection }), 'hasCollection');
  check(exists.value === false, 'collection still there after dropCollection', exists);

  await client.closeConnection();
  console.log(JSON.stringify(summary));
}

main().catch(err => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
