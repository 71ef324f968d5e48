import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Connection } from "../../src/api/connections.ts";
import { mapConcurrently, SvcSandbox } from "../support/cli.ts";

const LOGINS = 50;

describe("fifty parallel API-key logins", () => {
  let sandbox: SvcSandbox;

  beforeAll(async () => {
    sandbox = await SvcSandbox.create();
    // Start the daemon and create the identity once, before the CLI processes race.
    expect((await sandbox.run(["whoami"])).code).toBe(0);
  });
  afterAll(async () => {
    await sandbox.destroy();
  });

  it("stores every connection of one provider, with exactly one default", async () => {
    const keys = Array.from({ length: LOGINS }, (_, index) => ({
      connection: `parallel-${String(index).padStart(2, "0")}`,
      key: `sk-par-${randomBytes(12).toString("hex")}`,
    }));
    const results = await mapConcurrently(keys, 10, ({ connection, key }) =>
      sandbox.run(["login", "openai", "--connection", connection], { input: `${key}\n` }),
    );
    for (const [index, result] of results.entries())
      expect(result.code, `${keys[index]!.connection}: ${result.stderr}`).toBe(0);

    const connections = await sandbox.json<Connection[]>(["connections", "--provider", "openai"]);
    expect(connections.map((connection) => connection.connection).sort()).toEqual(
      keys.map((entry) => entry.connection),
    );
    expect(connections.filter((connection) => connection.is_default)).toHaveLength(1);
    for (const connection of connections) {
      const key = keys.find((entry) => entry.connection === connection.connection)!.key;
      expect(connection.credential).toEqual({ type: "api_key", redacted: `••••${key.slice(-4)}` });
    }

    const list = await sandbox.json<{ bundled: Array<{ name: string; connections: string[] }> }>([
      "provider",
      "list",
    ]);
    expect(list.bundled.find((item) => item.name === "openai")!.connections).toHaveLength(LOGINS);

    // The same again against one connection name: exactly one login wins, the others exit 6.
    const contested = await mapConcurrently(Array.from({ length: 10 }), 10, () =>
      sandbox.run(["login", "openai", "--connection", "contested"], {
        input: `sk-race-${randomBytes(12).toString("hex")}\n`,
      }),
    );
    const codes = contested.map((result) => result.code).sort();
    expect(codes.filter((code) => code === 0)).toHaveLength(1);
    expect(codes.filter((code) => code !== 0).every((code) => code === 6)).toBe(true);
  });
});
