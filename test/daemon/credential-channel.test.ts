/**
 * The credential channel against a local attacker: it opens only with a fresh PoP token signed for
 * it by a registered, claimed identity, it serves that identity's vault and nobody else's, and it
 * answers each message as resolve would. A real daemon; raw upgrade requests, as an attacker sends.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHANNEL_PATH, CHANNEL_PROTOCOL, type ResolvedCredential } from "../../src/api/credentials.ts";
import { ResolveChannel } from "../../src/client/resolve-channel.ts";
import { ConnectionNotFoundError, ProviderNotFoundError } from "../../src/core/errors.ts";
import type { LocalIdentity } from "../../src/identity/identity-files.ts";
import { signPopToken } from "../../src/identity/pop-token.ts";
import { loginWithApiKey, startTestDaemon, type TestDaemon } from "../support/daemon.ts";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const KEY = `sk-channel-${hex(16)}`;

interface Opened {
  status: number;
  body: string;
  socket?: Socket;
}

/** Sends the upgrade request as given and reports the status (101 with the open socket). */
function upgrade(baseUrl: string, headers: Record<string, string>, path = CHANNEL_PATH): Promise<Opened> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({
      hostname: url.hostname,
      port: url.port,
      path,
      method: "GET",
      agent: false,
      headers: { connection: "Upgrade", upgrade: CHANNEL_PROTOCOL, ...headers },
    });
    request.once("upgrade", (response, socket) =>
      resolve({ status: response.statusCode ?? 0, body: "", socket: socket as Socket }),
    );
    request.once("response", (response) => {
      let body = "";
      response.on("data", (chunk: Buffer) => {
        body += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.once("error", reject);
    request.end();
  });
}

const tokenFor = (
  identity: LocalIdentity,
  pathAndQuery = CHANNEL_PATH,
  extra: Partial<{ handle: string }> = {},
) => `PoP ${signPopToken({ ...identity, ...extra, method: "GET", pathAndQuery })}`;

/** Writes messages and collects the answers, in arrival order, until `count` arrived. */
function exchange(socket: Socket, lines: string[], count: number): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const answers: Array<Record<string, unknown>> = [];
    let buffered = "";
    const timer = setTimeout(() => reject(new Error(`got ${answers.length} of ${count} answers`)), 5_000);
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk;
      for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
        answers.push(JSON.parse(buffered.slice(0, newline)));
        buffered = buffered.slice(newline + 1);
      }
      if (answers.length >= count) {
        clearTimeout(timer);
        resolve(answers);
      }
    });
    socket.write(lines.map((line) => `${line}\n`).join(""));
  });
}

describe("the credential channel", () => {
  let t: TestDaemon;

  beforeAll(async () => {
    t = await startTestDaemon();
    await loginWithApiKey(t.client, "openai", KEY);
  });
  afterAll(async () => {
    await t.stop();
  });

  it("opens with a fresh token signed for it, and answers each message as resolve would", async () => {
    const opened = await upgrade(t.client.baseUrl, { authorization: tokenFor(t.identity) });
    expect(opened.status).toBe(101);
    const answers = await exchange(
      opened.socket!,
      [
        JSON.stringify({ id: 1, resolve: { host: "api.openai.com", path: "/v1/models" } }),
        JSON.stringify({ id: 2, resolve: { provider: "nosuch" } }),
        JSON.stringify({ id: 3, resolve: { provider: "openai", connection: "nope" } }),
        "not json",
      ],
      4,
    );
    opened.socket!.destroy();
    const byId = new Map(answers.map((answer) => [answer.id, answer]));
    expect((byId.get(1)?.credential as ResolvedCredential | undefined)?.header_value).toBe(`Bearer ${KEY}`);
    expect(byId.get(2)).toMatchObject({ error: { error: "ProviderNotFoundError" } });
    expect(byId.get(3)).toMatchObject({ error: { error: "ConnectionNotFoundError" } });
    expect(byId.get(0)).toMatchObject({ error: { error: "InvalidInputError" } });
  });

  it("refuses to open without a token, with a token signed for another route, or with a used token", async () => {
    const none = await upgrade(t.client.baseUrl, {});
    expect(none.status).toBe(401);
    const otherRoute = await upgrade(t.client.baseUrl, {
      authorization: tokenFor(t.identity, "/api/whoami"),
    });
    expect(otherRoute.status).toBe(401);
    const token = tokenFor(t.identity);
    const first = await upgrade(t.client.baseUrl, { authorization: token });
    expect(first.status).toBe(101);
    first.socket!.destroy();
    // A token captured from the proxy's own opening (a log, a dump) cannot open a second channel.
    const replayed = await upgrade(t.client.baseUrl, { authorization: token });
    expect(replayed.status).toBe(401);
    expect(JSON.parse(replayed.body)).toMatchObject({ error: "AuthenticationFailedError" });
    for (const refused of [none, otherRoute, replayed]) expect(refused.socket).toBeUndefined();
  });

  it("refuses a token that names another identity than the key that signed it", async () => {
    const other = await t.newIdentity();
    const forged = tokenFor(t.identity, CHANNEL_PATH, { handle: other.identity.handle });
    const opened = await upgrade(t.client.baseUrl, { authorization: forged });
    expect(opened.status).toBe(401);
  });

  it("serves the vault of the identity that opened it, not another principal's", async () => {
    const stranger = await t.newUser();
    const opened = await upgrade(t.client.baseUrl, { authorization: tokenFor(stranger.identity) });
    expect(opened.status).toBe(101);
    const [answer] = await exchange(
      opened.socket!,
      [JSON.stringify({ id: 7, resolve: { provider: "openai" } })],
      1,
    );
    opened.socket!.destroy();
    expect(answer).toMatchObject({ id: 7, error: { error: "ConnectionNotFoundError" } });
    expect(JSON.stringify(answer)).not.toContain(KEY);
  });

  it("refuses an unclaimed identity, another path, another Host and another protocol", async () => {
    const unclaimed = await t.newIdentity({ claim: false });
    expect((await upgrade(t.client.baseUrl, { authorization: tokenFor(unclaimed.identity) })).status).toBe(
      403,
    );
    const elsewhere = await upgrade(t.client.baseUrl, { authorization: tokenFor(t.identity, "/x") }, "/x");
    expect(elsewhere.status).toBe(404);
    const rebound = await upgrade(t.client.baseUrl, {
      authorization: tokenFor(t.identity),
      host: "evil.test",
    });
    expect(rebound.status).toBe(403);
    const websocket = await upgrade(t.client.baseUrl, {
      authorization: tokenFor(t.identity),
      upgrade: "websocket",
    });
    expect(websocket.status).toBe(400);
  });

  it("the client resolves through it, maps refusals to svc's errors, and answers nothing once closed (the caller then uses HTTP)", async () => {
    const channel = new ResolveChannel(t.client);
    const credential = await channel.resolve({ provider: "openai" });
    expect(credential?.header_value).toBe(`Bearer ${KEY}`);
    await expect(channel.resolve({ provider: "nosuch" })).rejects.toBeInstanceOf(ProviderNotFoundError);
    await expect(channel.resolve({ provider: "openai", connection: "nope" })).rejects.toBeInstanceOf(
      ConnectionNotFoundError,
    );
    const parallel = await Promise.all(
      Array.from({ length: 50 }, () => channel.resolve({ host: "api.openai.com", path: "/v1/x" })),
    );
    expect(new Set(parallel.map((answer) => answer?.header_value))).toEqual(new Set([`Bearer ${KEY}`]));
    channel.close();
    expect(await channel.resolve({ provider: "openai" })).toBeUndefined();
  });
});
