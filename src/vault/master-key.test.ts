import { spawn } from "node:child_process";
import { createHash, hkdfSync, randomBytes } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type KeyringAccess,
  type MasterKeyResolution,
  masterKeyWarnings,
  memoryKeyring,
  noKeyring,
  osKeyring,
  resolveMasterKey,
} from "./master-key.ts";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, "../..");

let dir: string;
let keyPath: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-vault-"));
  keyPath = join(dir, "server", "master.key");
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function allText(resolution: MasterKeyResolution): string {
  return [resolution.backend, ...resolution.warnings, ...resolution.issues].join("\n");
}

function throwingKeyring(): KeyringAccess {
  return {
    availability: () => ({ available: true }),
    read: () => {
      throw new Error("keyring must not be read");
    },
    write: () => {
      throw new Error("keyring must not be written");
    },
  };
}

describe("resolveMasterKey", () => {
  it("SVC_MASTER_KEY wins over everything, derived with HKDF-SHA256", async () => {
    const keyring = memoryKeyring(randomBytes(32).toString("base64"));
    writeFileSync(join(dir, "other.key"), randomBytes(32).toString("base64"));
    const value = "a passphrase that is long enough to be used";
    const result = await resolveMasterKey({
      env: {
        SVC_MASTER_KEY: value,
        SVC_MASTER_KEY_FILE: join(dir, "other.key"),
        SVC_ENCRYPTION_MODE: "keyring",
      },
      localKeyPath: keyPath,
      keyring,
    });
    expect(result.issues).toEqual([]);
    expect(result.effectiveSource).toBe("env");
    expect(result.configuredMode).toBe("keyring");
    expect(result.backend).toBe("environment variable SVC_MASTER_KEY");
    const expected = Buffer.from(
      hkdfSync("sha256", Buffer.from(value), Buffer.alloc(0), "svc/master-key/env/v1", 32),
    );
    expect(result.secret?.equals(expected)).toBe(true);
    expect(result.warnings.join("\n")).toMatch(/SVC_MASTER_KEY_FILE is ignored/);
    expect(keyring.writes).toBe(0);
    expect(existsSync(keyPath)).toBe(false);
  });

  it("SVC_MASTER_KEY holding base64 of 32 bytes is used as the key itself", async () => {
    const raw = randomBytes(32);
    const result = await resolveMasterKey({
      env: { SVC_MASTER_KEY: raw.toString("base64") },
      localKeyPath: keyPath,
      keyring: noKeyring("none"),
    });
    expect(result.secret?.equals(raw)).toBe(true);
  });

  it("a too-short SVC_MASTER_KEY is an issue and yields no secret", async () => {
    const result = await resolveMasterKey({
      env: { SVC_MASTER_KEY: "short-CANARY" },
      localKeyPath: keyPath,
      keyring: memoryKeyring(),
    });
    expect(result.secret).toBeUndefined();
    expect(result.issues.join()).toMatch(/at least 32 characters/);
    expect(allText(result)).not.toContain("short-CANARY");
    expect(existsSync(keyPath)).toBe(false);
  });

  it("SVC_MASTER_KEY_FILE is read as a local key and never created", async () => {
    const file = join(dir, "given.key");
    const raw = randomBytes(32);
    writeFileSync(file, `${raw.toString("base64")}\n`, { mode: 0o600 });
    const result = await resolveMasterKey({
      env: { SVC_MASTER_KEY_FILE: file },
      localKeyPath: keyPath,
      keyring: throwingKeyring(),
    });
    expect(result.effectiveSource).toBe("local_key");
    expect(result.backend).toBe(`key file ${file}`);
    expect(result.secret?.equals(raw)).toBe(true);

    const missing = await resolveMasterKey({
      env: { SVC_MASTER_KEY_FILE: join(dir, "missing.key") },
      localKeyPath: keyPath,
      keyring: throwingKeyring(),
    });
    expect(missing.secret).toBeUndefined();
    expect(missing.issues.join()).toMatch(/does not exist/);
    expect(existsSync(join(dir, "missing.key"))).toBe(false);
  });

  it("auto without a keyring creates the local key file 0600 and warns", async () => {
    const result = await resolveMasterKey({ env: {}, localKeyPath: keyPath, keyring: noKeyring("no D-Bus") });
    expect(result.issues).toEqual([]);
    expect(result.configuredMode).toBe("auto");
    expect(result.effectiveSource).toBe("local_key");
    expect(result.backend).toBe(`key file ${keyPath}`);
    expect(result.warnings).toEqual([`OS keyring unavailable (no D-Bus); using local key file ${keyPath}`]);
    expect(statSync(keyPath).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(keyPath, "utf8").trim(), "base64").equals(result.secret!)).toBe(true);

    const again = await resolveMasterKey({ env: {}, localKeyPath: keyPath, keyring: noKeyring("no D-Bus") });
    expect(again.secret?.equals(result.secret!)).toBe(true);
    expect(again.warnings).toEqual([]);
  });

  it("auto prefers an existing local key file over a keyring that became available", async () => {
    const first = await resolveMasterKey({ env: {}, localKeyPath: keyPath, keyring: noKeyring("none") });
    const keyring = memoryKeyring();
    const second = await resolveMasterKey({ env: {}, localKeyPath: keyPath, keyring });
    expect(second.effectiveSource).toBe("local_key");
    expect(second.secret?.equals(first.secret!)).toBe(true);
    expect(keyring.writes).toBe(0);
  });

  it("auto uses an existing keyring entry, and creates one in an available keyring", async () => {
    const keyring = memoryKeyring();
    const created = await resolveMasterKey({ env: {}, localKeyPath: keyPath, keyring });
    expect(created.effectiveSource).toBe("keyring");
    expect(created.backend).toBe("memory keyring");
    expect(keyring.writes).toBe(1);
    expect(Buffer.from(keyring.value!, "base64").equals(created.secret!)).toBe(true);
    expect(existsSync(keyPath)).toBe(false);
    expect(existsSync(`${keyPath}.keyring-lock`)).toBe(false);

    const again = await resolveMasterKey({ env: {}, localKeyPath: keyPath, keyring });
    expect(again.secret?.equals(created.secret!)).toBe(true);
    expect(keyring.writes).toBe(1);
  });

  it("auto warns when both a keyring entry and a local key file exist, and uses the keyring", async () => {
    await resolveMasterKey({ env: {}, localKeyPath: keyPath, keyring: noKeyring("none") });
    const raw = randomBytes(32);
    const result = await resolveMasterKey({
      env: {},
      localKeyPath: keyPath,
      keyring: memoryKeyring(raw.toString("base64")),
    });
    expect(result.effectiveSource).toBe("keyring");
    expect(result.secret?.equals(raw)).toBe(true);
    expect(result.warnings.join()).toMatch(/both/);
  });

  it("keyring mode without a keyring is an issue", async () => {
    const result = await resolveMasterKey({
      env: { SVC_ENCRYPTION_MODE: "keyring" },
      localKeyPath: keyPath,
      keyring: noKeyring("no Secret Service"),
    });
    expect(result.secret).toBeUndefined();
    expect(result.configuredMode).toBe("keyring");
    expect(result.issues).toEqual([
      "OS keyring unavailable: no Secret Service; set SVC_ENCRYPTION_MODE=local_key or SVC_MASTER_KEY",
    ]);
    expect(existsSync(keyPath)).toBe(false);
  });

  it("keyring mode creates the entry when absent", async () => {
    const keyring = memoryKeyring();
    const result = await resolveMasterKey({
      env: { SVC_ENCRYPTION_MODE: "keyring" },
      localKeyPath: keyPath,
      keyring,
    });
    expect(result.effectiveSource).toBe("keyring");
    expect(keyring.writes).toBe(1);
  });

  it("a malformed keyring entry is an issue and is left untouched", async () => {
    const keyring = memoryKeyring("garbage");
    const result = await resolveMasterKey({ env: {}, localKeyPath: keyPath, keyring });
    expect(result.secret).toBeUndefined();
    expect(result.issues.join()).toMatch(/not a base64-encoded 32-byte key/);
    expect(keyring.value).toBe("garbage");
    expect(keyring.writes).toBe(0);
    expect(existsSync(keyPath)).toBe(false);
  });

  it("local_key mode ignores the keyring", async () => {
    const result = await resolveMasterKey({
      env: { SVC_ENCRYPTION_MODE: "local_key" },
      localKeyPath: keyPath,
      keyring: throwingKeyring(),
    });
    expect(result.effectiveSource).toBe("local_key");
    expect(result.configuredMode).toBe("local_key");
    expect(result.warnings).toEqual([]);
  });

  it("an unknown mode is an issue", async () => {
    const result = await resolveMasterKey({
      env: { SVC_ENCRYPTION_MODE: "keyrng" },
      localKeyPath: keyPath,
      keyring: memoryKeyring(),
    });
    expect(result.secret).toBeUndefined();
    expect(result.issues.join()).toMatch(/SVC_ENCRYPTION_MODE="keyrng" is not one of/);
    expect(existsSync(keyPath)).toBe(false);
  });

  it("a key file readable by others is used with a warning naming the file and mode", async () => {
    const first = await resolveMasterKey({
      env: { SVC_ENCRYPTION_MODE: "local_key" },
      localKeyPath: keyPath,
      keyring: noKeyring("none"),
    });
    chmodSync(keyPath, 0o644);
    const result = await resolveMasterKey({
      env: { SVC_ENCRYPTION_MODE: "local_key" },
      localKeyPath: keyPath,
      keyring: noKeyring("none"),
    });
    expect(result.secret?.equals(first.secret!)).toBe(true);
    expect(masterKeyWarnings(result)).toEqual([
      `master key file ${keyPath} has mode 0644; run chmod 600 ${keyPath}`,
    ]);
  });

  it("a key file with bad content is an issue and is never regenerated", async () => {
    mkdirSync(dirname(keyPath), { recursive: true });
    for (const content of ["not a key\n", "", `${randomBytes(16).toString("base64")}\n`]) {
      writeFileSync(keyPath, content, { mode: 0o600 });
      for (const mode of ["auto", "local_key"]) {
        const result = await resolveMasterKey({
          env: { SVC_ENCRYPTION_MODE: mode },
          localKeyPath: keyPath,
          keyring: noKeyring("none"),
        });
        expect(result.secret).toBeUndefined();
        expect(result.issues.join()).toMatch(/left untouched/);
        expect(readFileSync(keyPath, "utf8")).toBe(content);
      }
    }
  });

  it("two concurrent resolutions in one process agree", async () => {
    const options = {
      env: { SVC_ENCRYPTION_MODE: "local_key" },
      localKeyPath: keyPath,
      keyring: noKeyring("none"),
    };
    const [a, b] = await Promise.all([resolveMasterKey(options), resolveMasterKey(options)]);
    expect(a.secret?.equals(b.secret!)).toBe(true);
  });

  it("concurrent daemons creating the local key file all end up with the same key", async () => {
    const node = existsSync(join(repoRoot, "node_modules/.bin/node"))
      ? join(repoRoot, "node_modules/.bin/node")
      : process.execPath;
    const moduleUrl = new URL("./master-key.ts", import.meta.url).href;
    const script = `
      import { createHash } from "node:crypto";
      import { noKeyring, resolveMasterKey } from ${JSON.stringify(moduleUrl)};
      const start = Number(process.argv[1]);
      while (Date.now() < start) {}
      const r = await resolveMasterKey({ env: { SVC_ENCRYPTION_MODE: "local_key" }, localKeyPath: process.argv[2], keyring: noKeyring("none") });
      process.stdout.write(JSON.stringify({ issues: r.issues, hash: r.secret && createHash("sha256").update(r.secret).digest("hex") }));
    `;
    for (let round = 0; round < 3; round++) {
      const path = join(dir, `round${round}`, "server", "master.key");
      const start = Date.now() + 1500;
      const outputs = await Promise.all(
        Array.from(
          { length: 4 },
          () =>
            new Promise<string>((resolvePromise, reject) => {
              const child = spawn(
                node,
                ["--no-warnings", "--input-type=module", "-e", script, String(start), path],
                { stdio: ["ignore", "pipe", "pipe"] },
              );
              let out = "";
              let err = "";
              child.stdout.on("data", (chunk) => {
                out += chunk;
              });
              child.stderr.on("data", (chunk) => {
                err += chunk;
              });
              child.on("error", reject);
              child.on("close", (code) => (code === 0 ? resolvePromise(out) : reject(new Error(err))));
            }),
        ),
      );
      const results = outputs.map((out) => JSON.parse(out) as { issues: string[]; hash: string });
      for (const result of results) expect(result.issues).toEqual([]);
      const hashes = new Set(results.map((result) => result.hash));
      expect(hashes.size).toBe(1);
      const onDisk = createHash("sha256")
        .update(Buffer.from(readFileSync(path, "utf8").trim(), "base64"))
        .digest("hex");
      expect(hashes.has(onDisk)).toBe(true);
    }
  });

  it("never reveals the master key in warnings, issues or backend", async () => {
    const canary = "CANARY-master-key-0123456789-abcdefghijklmnop";
    const results = [
      await resolveMasterKey({
        env: { SVC_MASTER_KEY: canary },
        localKeyPath: keyPath,
        keyring: memoryKeyring(),
      }),
      await resolveMasterKey({
        env: { SVC_MASTER_KEY: canary, SVC_ENCRYPTION_MODE: "bogus" },
        localKeyPath: keyPath,
        keyring: memoryKeyring(),
      }),
      await resolveMasterKey({
        env: { SVC_MASTER_KEY: canary.slice(0, 20) },
        localKeyPath: keyPath,
        keyring: memoryKeyring(),
      }),
    ];
    for (const result of results) {
      const text = allText(result);
      expect(text).not.toContain(canary.slice(0, 20));
      if (results[0]!.secret) {
        expect(text).not.toContain(results[0]!.secret.toString("base64"));
        expect(text).not.toContain(results[0]!.secret.toString("hex"));
      }
    }
  });
});

describe("osKeyring", () => {
  it("reports unavailable, with a reason, when the keyring module is missing", () => {
    const keyring = osKeyring("svc-test", "master-key", { modulePath: join(dir, "missing.cjs") });
    const availability = keyring.availability();
    expect(availability.available).toBe(false);
    expect(availability.reason).toBeTruthy();
    expect(() => keyring.read()).toThrow();
  });

  it("a probe that hangs is cut off and reported unavailable", () => {
    const module = join(dir, "hang.cjs");
    writeFileSync(module, "exports.Entry = class { constructor() { for (;;) {} } };");
    const started = Date.now();
    const availability = osKeyring("svc-test", "master-key", {
      modulePath: module,
      probeTimeoutMs: 500,
    }).availability();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(availability).toEqual({ available: false, reason: "keyring did not answer within 500 ms" });
  });

  it("reads and writes through the helper process", async () => {
    const module = join(dir, "fake-keyring.cjs");
    writeFileSync(
      module,
      `const fs = require("node:fs"); const path = require("node:path");
       exports.Entry = class {
         constructor(service, account) { this.file = path.join(__dirname, service + "-" + account + ".txt"); }
         getPassword() { return fs.existsSync(this.file) ? fs.readFileSync(this.file, "utf8") : null; }
         setPassword(value) { fs.writeFileSync(this.file, value); }
       };`,
    );
    const keyring = osKeyring("svc-test", "master-key", { modulePath: module });
    expect(keyring.description).toBe("OS keyring (service svc-test)");
    expect(keyring.availability()).toEqual({ available: true });
    expect(keyring.read()).toBeUndefined();
    const result = await resolveMasterKey({ env: {}, localKeyPath: keyPath, keyring });
    expect(result.effectiveSource).toBe("keyring");
    expect(result.backend).toBe("OS keyring (service svc-test)");
    expect(keyring.read()).toBe(result.secret!.toString("base64"));
  });

  it("the real OS keyring probe answers promptly (available or not)", () => {
    const started = Date.now();
    const availability = osKeyring("svc-test-probe").availability();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(typeof availability.available).toBe("boolean");
    if (!availability.available) expect(availability.reason).toBeTruthy();
  });
});
