// The HttpClient (RESTful API v2) flow of the official Milvus Node.js SDK against one server; run by
// tests/e2e/test_node_sdk.py.
//
//   node http_flow.js http://127.0.0.1:19531 COLLECTION
//
// Create (quick setup), insert, wait until loaded, flush, search, query, describe, drop: every step
// checks its answer and the first wrong one throws (exit status 1, the reason on stderr). On success the
// last line on stdout is a JSON summary the Python test checks again. The SDK sends
// `Accept-Type-Allow-Int64: false` unless told otherwise, so int64 ids come back as strings.
'use strict';

const { HttpClient } = require('@zilliz/milvus2-sdk-node');

const [endpoint, collectionName] = process.argv.slice(2);
const DIM = 8;
const ROWS = 200;

function check(condition, what, answer) {
  if (!condition) {
    throw new Error(`${what}: ${JSON.stringify(answer)}`);
  }
}

function ok(answer, what) {
  check(answer.code === 0, `${what} failed`, answer);
  return answer.data;
}

function vector(i) {
  // Distinct, deterministic vectors: row i is closest to itself.
  return Array.from({ length: DIM }, (_, d) => Math.sin(i * (d + 1)) + d * 0.01);
}

async function main() {
  const client = new HttpClient({ endpoint, timeout: 60000 });
  const summary = {};

  ok(await client.createCollection({ collectionName, dimension: DIM, metricType: 'L2' }), 'createCollection');
  summary.has = ok(await client.hasCollection({ collectionName }), 'hasCollection').has;

  const data = Array.from({ length: ROWS }, (_, i) => ({ id: i, vector: vector(i), tag: `t${i % 5}` }));
  const inserted = ok(await client.insert({ collectionName, data }), 'insert');
  check(inserted.insertCount === ROWS, 'insertCount', inserted);
  summary.first_ids = inserted.insertIds.slice(0, 3);

  // Quick setup creates the index and loads the collection in the background, as in Milvus.
  const deadline = Date.now() + 60000;
  for (;;) {
    const state = ok(await client.getCollectionLoadState({ collectionName }), 'getCollectionLoadState');
    if (state.loadState === 'LoadStateLoaded') break;
    check(Date.now() < deadline, 'not loaded in 60 s', state);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  ok(await client.flushCollection({ collectionName }), 'flushCollection');

  const hits = ok(
    await client.search({
      collectionName, data: [vector(7)], limit: 3, outputFields: ['tag'], consistencyLevel: 'Strong',
    }),
    'search',
  );
  check(hits.length === 3, 'search hits', hits);
  summary.search_top = { id: hits[0].id, tag: hits[0].tag };

  const rows = ok(
    await client.query({
      collectionName, filter: 'id in [3, 5, 199]', outputFields: ['id', 'tag'], consistencyLevel: 'Strong',
    }),
    'query',
  );
  summary.query = rows.map((r) => [r.id, r.tag]).sort();

  const described = ok(await client.describeCollection({ collectionName }), 'describeCollection');
  summary.fields = described.fields.map((f) => f.name).sort();

  ok(await client.dropCollection({ collectionName }), 'dropCollection');
  summary.has_after_drop = ok(await client.hasCollection({ collectionName }), 'hasCollection').has;
  console.log(JSON.stringify(summary));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
