import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InvalidInputError, NotFoundError } from "../core/errors.ts";
import { publicKeyFromDid } from "./did-key.ts";
import { IdentityFiles } from "./identity-files.ts";
import { signPopToken } from "./pop-sign.ts";
import { verifyPopToken } from "./pop-verify.ts";
import { MemoryReplayCache } from "./replay-cache.ts";

let root: string;
let directory: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "svc-id-"));
  directory = join(root, "client", "identities");
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function modeOf(path: string): number {
  return statSync(path).mode & 0o777;
}

describe("IdentityFiles", () => {
  it("writes a 0600 key, a 0700 directory and a .json with handle, did and created_at", () => {
    const files = new IdentityFiles(directory, { now: () => new Date("2026-01-02T03:04:05.000Z") });
    const identity = files.create("agent-one");

    expect(identity.handle).toBe("agent-one");
    expect(identity.did).toMatch(/^did:key:z6Mk/);
    expect(identity.createdAt).toBe("2026-01-02T03:04:05.000Z");
    expect(modeOf(directory)).toBe(0o700);
    expect(modeOf(join(directory, "agent-one.key"))).toBe(0o600);
    expect(files.keyFileMode("agent-one")).toBe(0o600);
    expect(readFileSync(join(directory, "agent-one.key"), "utf8")).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(JSON.parse(readFileSync(join(directory, "agent-one.json"), "utf8"))).toEqual({
      handle: "agent-one",
      did: identity.did,
      created_at: "2026-01-02T03:04:05.000Z",
    });
  });

  it("tightens an existing directory to 0700", () => {
    const files = new IdentityFiles(directory);
    files.create("agent-one");
    chmodSync(directory, 0o755);
    files.create("agent-two");
    expect(modeOf(directory)).toBe(0o700);
  });

  it("generates a valid handle when none is given", () => {
    const files = new IdentityFiles(directory);
    const identity = files.create();
    expect(identity.handle).toMatch(/^[a-z]+-[a-z]+-[0-9]{4}$/);
    expect(files.exists(identity.handle)).toBe(true);
  });

  it("skips generated handles that are already taken", () => {
    const draws = [0, 0, 0, 0, 0, 1];
    const files = new IdentityFiles(directory, { randomInt: () => draws.shift() ?? 0 });
    expect(files.create("amber-otter-1000").handle).toBe("amber-otter-1000");
    expect(files.create().handle).toBe("amber-otter-1001");
  });

  it("refuses a duplicate handle", () => {
    const files = new IdentityFiles(directory);
    const first = files.create("agent-one");
    expect(() => files.create("agent-one")).toThrow(InvalidInputError);
    expect(files.load("agent-one").did).toBe(first.did);
  });

  it("refuses a handle whose key file already exists, even without its .json", () => {
    const files = new IdentityFiles(directory);
    files.create("agent-one");
    rmSync(join(directory, "agent-one.json"));
    expect(() => files.create("agent-one")).toThrow(InvalidInputError);
  });

  it.each(["../escape", "a/b", "UPPER", "x", "dot.ted"])("refuses the invalid handle %j", (handle) => {
    const files = new IdentityFiles(directory);
    expect(() => files.create(handle)).toThrow(InvalidInputError);
    expect(() => files.load(handle)).toThrow(InvalidInputError);
    expect(files.exists(handle)).toBe(false);
  });

  it("loads back a key that signs PoP tokens that verify", async () => {
    const files = new IdentityFiles(directory);
    const created = files.create("agent-one");
    const loaded = new IdentityFiles(directory).load("agent-one");
    expect(loaded.handle).toBe("agent-one");
    expect(loaded.did).toBe(created.did);
    expect(loaded.createdAt).toBe(created.createdAt);

    const nowSeconds = 1_800_000_000;
    const token = signPopToken({
      handle: loaded.handle,
      did: loaded.did,
      privateKey: loaded.privateKey,
      method: "GET",
      pathAndQuery: "/api/ready",
      nowSeconds,
    });
    const claims = await verifyPopToken(
      token,
      { method: "GET", pathAndQuery: "/api/ready", body: new Uint8Array() },
      {
        nowSeconds,
        replayCache: new MemoryReplayCache(),
        lookupIdentity: (handle) =>
          handle === created.handle
            ? { did: created.did, publicKey: publicKeyFromDid(created.did) }
            : undefined,
      },
    );
    expect(claims.sub).toBe("agent-one");
  });

  it("throws NotFoundError for an identity that does not exist", () => {
    const files = new IdentityFiles(directory);
    expect(() => files.load("nobody-here")).toThrow(NotFoundError);
    expect(() => files.keyFileMode("nobody-here")).toThrow(NotFoundError);
  });

  it("still loads a key file with a wider mode, and reports the mode", () => {
    const files = new IdentityFiles(directory);
    files.create("agent-one");
    chmodSync(join(directory, "agent-one.key"), 0o644);
    expect(files.load("agent-one").handle).toBe("agent-one");
    expect(files.keyFileMode("agent-one")).toBe(0o644);
  });

  it("refuses to load an identity whose key does not match its recorded did", () => {
    const files = new IdentityFiles(directory);
    files.create("agent-one");
    const other = files.create("agent-two");
    const metadataPath = join(directory, "agent-one.json");
    const metadata = JSON.parse(readFileSync(metadataPath, "utf8"));
    writeFileSync(metadataPath, JSON.stringify({ ...metadata, did: other.did }));
    expect(() => files.load("agent-one")).toThrow(InvalidInputError);
  });

  it("lists complete identities sorted, and nothing when the directory is missing", () => {
    const files = new IdentityFiles(directory);
    expect(files.list()).toEqual([]);
    files.create("zeta-agent");
    files.create("alpha-agent");
    files.create("mid-agent");
    writeFileSync(join(directory, "notes.txt"), "ignored");
    writeFileSync(join(directory, "Bad.Name.key"), "ignored");
    rmSync(join(directory, "mid-agent.json"));
    expect(files.list()).toEqual(["alpha-agent", "zeta-agent"]);
    expect(files.exists("mid-agent")).toBe(true);
    expect(files.exists("never-made")).toBe(false);
  });
});
