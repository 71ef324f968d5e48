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
  const [seen, rows] = await Promise.all([lastSeen(db, [handle]), requestCounts(db, handle, now)]);
  return {
    last_seen: seen.get(handle) ?? null,
    last_24h: rows
      .filter((row) => row.day > 0)
      .map(({ provider, status, day }) => ({ provider, status, count: day })),
    last_7d: rows.map(({ provider, status, week }) => ({ provider, status, count: week })),
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

/** Both windows in one pass over the week's index entries: the day's are counted on the way. */
async function requestCounts(db: Kysely<Database>, handle: string, now: Date) {
  const day = new Date(now.getTime() - DAY_MS).toISOString();
  const rows = await db
    .selectFrom("audit_events")
    .select((eb) => [
      "provider",
      "status",
      eb.fn.countAll<number | string | bigint>().as("week"),
      eb.fn
        .sum<number | string | bigint>(eb.case().when("timestamp", ">=", day).then(1).else(0).end())
        .as("day"),
    ])
    .where("identity", "=", handle)
    .where("timestamp", ">=", new Date(now.getTime() - 7 * DAY_MS).toISOString())
    .where("source", "=", "external")
    .groupBy(["provider", "status"])
    .orderBy("provider")
    .orderBy("status")
    .execute();
  return rows.map((row) => ({
    provider: row.provider,
    status: row.status,
    week: Number(row.week),
    day: Number(row.day),
  }));
}
