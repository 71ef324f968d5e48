import type { Kysely } from "kysely";
import type { Database } from "../store/schema.ts";

const DAY_MS = 24 * 60 * 60_000;

export interface ActivityCount {
  provider: string | null;
  status: string;
  count: number;
}

export interface IdentityActivity {
  last_seen: string | null;
  last_24h: ActivityCount[];
  last_7d: ActivityCount[];
}

/**
 * What an identity did: its latest event, and the calls it made through the proxy (external
 * events) per provider and outcome over the last day and week. Both read only the
 * `audit_events_identity_idx` index (identity, timestamp, source, provider, status).
 */
export async function identityActivity(
  db: Kysely<Database>,
  handle: string,
  now: Date,
): Promise<IdentityActivity> {
  const [seen, week] = await Promise.all([
    lastSeen(db, [handle]),
    requestCounts(db, handle, new Date(now.getTime() - 7 * DAY_MS)),
  ]);
  return {
    last_seen: seen.get(handle) ?? null,
    last_24h: await requestCounts(db, handle, new Date(now.getTime() - DAY_MS)),
    last_7d: week,
  };
}

/** The time of each identity's latest audit event (absent: none). */
export async function lastSeen(
  db: Kysely<Database>,
  handles: readonly string[],
): Promise<Map<string, string>> {
  const seen = new Map<string, string>();
  // One indexed max() per identity: the last entry of its range, whatever the table's size.
  for (const handle of handles) {
    const row = await db
      .selectFrom("audit_events")
      .select((eb) => eb.fn.max("timestamp").as("last"))
      .where("identity", "=", handle)
      .executeTakeFirst();
    if (row?.last) seen.set(handle, row.last);
  }
  return seen;
}

async function requestCounts(db: Kysely<Database>, handle: string, since: Date): Promise<ActivityCount[]> {
  const rows = await db
    .selectFrom("audit_events")
    .select(["provider", "status", (eb) => eb.fn.countAll<number | string | bigint>().as("n")])
    .where("identity", "=", handle)
    .where("timestamp", ">=", since.toISOString())
    .where("source", "=", "external")
    .groupBy(["provider", "status"])
    .orderBy("provider")
    .orderBy("status")
    .execute();
  return rows.map((row) => ({ provider: row.provider, status: row.status, count: Number(row.n) }));
}
