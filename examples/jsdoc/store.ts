// The @example of each public entry point of tool-envelope/store, /store/sqlite and /store/postgres (see core.ts).
import {
  type AuditRecord,
  CHAIN_PURPOSE,
  type ChainReader,
  createMemoryStore,
  createRedactor,
  loadOperatorKey,
  openStore,
  verifyAuditChain,
} from '../../src/store/index.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';

export async function example_openStore() {
  //#region openStore
  const store = await openStore(process.env.TOOL_ENVELOPE_STORE ?? './tool-envelope.db');
  //#endregion
  return store;
}

export async function example_createMemoryStore(record: AuditRecord) {
  //#region createMemoryStore
  const store = createMemoryStore();
  await store.appendAudit([record]);
  //#endregion
}

export async function example_openSqliteStore() {
  //#region openSqliteStore
  const store = await openSqliteStore({ path: './tool-envelope.db' });
  console.log(await store.schemaVersion());
  await store.close();
  //#endregion
}

export async function example_openPostgresStore() {
  //#region openPostgresStore
  const store = await openPostgresStore({ connectionString: process.env.DATABASE_URL ?? 'postgres://localhost/app', schema: 'tool_envelope' });
  await store.close();
  //#endregion
}

export async function example_loadOperatorKey() {
  //#region loadOperatorKey
  const key = await loadOperatorKey({ file: './operator.key', create: true });
  //#endregion
  return key;
}

export async function example_verifyAuditChain(reader: ChainReader) {
  //#region verifyAuditChain
  const operatorKey = await loadOperatorKey({ file: './operator.key' });
  const report = await verifyAuditChain(reader, operatorKey.derive(CHAIN_PURPOSE));
  //#endregion
  return report;
}

export function example_createRedactor(record: AuditRecord) {
  //#region createRedactor
  const redact = createRedactor();
  redact(record).redaction; // { pointers: ['/callEnvelope/args/password'] } when it had one
  //#endregion
}
