/**
 * `node bench/agent-activity.ts [sqlite|postgres ...]`: how long the Agents page's activity query
 * takes with a million audit events. Fills a fresh store (the real migrations) with 1,000,000
 * events over 30 days from 50 identities, one of them ("busy") making half of them, then times
 * `identityActivity` (last seen, requests per provider and outcome over 24 h and 7 days) for the
 * busy and a quiet identity, and `lastSeen` for all 50; then once more without the identity index,
 * for comparison. Writes bench/results/agent-activity.json. PostgreSQL: SVC_TEST_DATABASE_URL
 * (default postgres://postgres@127.0.0.1:5432/test), in a schema of its own, dropped afterwards.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Kysely, sql } from "kysely";
import { identityActivity, lastSeen } from "../src/audit/agent-activity.ts";
import type { Database } from "../src/store/schema.ts";
import { createStoreFixture, type StoreKind } from "../test/support/stores.ts";
import { type Summary, summarize } from "./stats.ts";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const WARMUPS = 3;
const SPAN_MS = 30 * 24 * 60 * 60_000;
const IDENTITIES = ["busy", ...Array.from({ length: 49 }, (_, i) => `agent-${i}`)];

/**
 * One INSERT ... SELECT over a generated series: every 2nd event is "busy"'s, every 10th internal,
 * 1 in 13 a failure and 1 in 97 an error, over 7 providers, newest first, evenly over 30 days.
 */
function fillStatement(kind: StoreKind, newestMs: number) {
  const step = Math.floor(SPAN_MS / EVENTS);
  const providers = ["openai", "anthropic", "github", "aws", "groq", "mistral", "slack"];
  const provider = `case n % 7 ${providers.map((name, i) => `when ${i} then '${name}'`).join(" ")} end`;
  const rest = `
    case when n % 10 = 0 then 'credential.resolved' else 'proxy.request' end,
    case when n % 10 = 0 then 'internal' else 'external' end,
    case when n % 97 = 0 then 'error' when n % 13 = 0 then 'failure' else 'success' end,
    ${provider}, 'default',
    case when n % 2 = 0 then 'busy' else 'agent-' || (n % 49) end,
    'prn_bench', null`;
  const columns =
    "insert into audit_events (id, timestamp, event, source, status, provider, connection, identity, principal_id, detail)";
  if (kind === "sqlite") {
    return sql.raw(`with recursive s(n) as (select 0 union all select n + 1 from s where n < ${EVENTS - 1})
      ${columns}
      select printf('evt_%013d_%012d', ${newestMs} - n * ${step}, n),
             strftime('%Y-%m-%dT%H:%M:%fZ', (${newestMs} - n * ${step}) / 1000.0, 'unixepoch'),
             ${rest}
      from s`);
  }
  return sql.raw(`${columns}
    select 'evt_' || lpad((${newestMs}::bigint - n * ${step})::text, 13, '0') || '_' || lpad(n::text, 12, '0'),
           to_char(to_timestamp((${newestMs}::bigint - n * ${step}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           ${rest}
    from generate_series(0::bigint, ${EVENTS - 1}) as n`);
}

async function time(task: () => Promise<unknown>): Promise<Summary> {
  for (let i = 0; i < WARMUPS; i++) await task();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await task();
    samples.push(performance.now() - start);
  }
  return summarize(samples);
}

async function measure(db: Kysely<Database>, now: Date) {
  const busy = await identityActivity(db, "busy", now);
  return {
    busy_identity_activity: await time(() => identityActivity(db, "busy", now)),
    quiet_identity_activity: await time(() => identityActivity(db, "agent-7", now)),
    last_seen_of_50_identities: await time(() => lastSeen(db, IDENTITIES)),
    busy_requests_counted_7d: busy.last_7d.reduce((sum, row) => sum + row.count, 0),
  };
}

async function bench(kind: StoreKind) {
  const fixture = await createStoreFixture(kind);
  try {
    const store = await fixture.open();
    const now = new Date();
    const fillStart = performance.now();
    await fillStatement(kind, now.getTime()).execute(store.db);
    // What autovacuum would have done by the time anyone looks: statistics, and (PostgreSQL) the
    // visibility map that lets an index-only scan skip the table.
    await sql.raw(kind === "sqlite" ? "analyze" : "vacuum analyze audit_events").execute(store.db);
    const fill_ms = Math.round(performance.now() - fillStart);
    const withIndex = await measure(store.db, now);
    await store.db.schema.dropIndex("audit_events_identity_idx").execute();
    const withoutIndex = await measure(store.db, now);
    return {
      store: kind,
      events: EVENTS,
      fill_ms,
      with_identity_index: withIndex,
      without_identity_index: withoutIndex,
    };
  } finally {
    await fixture.dispose();
  }
}

async function main(): Promise<void> {
  const kinds = (process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["sqlite"]) as StoreKind[];
  const results = [];
  for (const kind of kinds) {
    const result = await bench(kind);
    results.push(result);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  }
  const dir = fileURLToPath(new URL("./results/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "agent-activity.json");
  // Keeps the other store's figures from an earlier run of only one kind.
  let previous: Array<{ store: string }> = [];
  try {
    previous = (JSON.parse(readFileSync(path, "utf8")) as { results: Array<{ store: string }> }).results;
  } catch {
    previous = [];
  }
  const merged = [...previous.filter((entry) => !kinds.includes(entry.store as StoreKind)), ...results];
  writeFileSync(
    path,
    `${JSON.stringify({ node: process.version, runs: RUNS, measured_at: new Date().toISOString(), results: merged }, null, 2)}\n`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
