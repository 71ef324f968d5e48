import { describe, expect, it } from "vitest";
import { type ChildEnvironmentOptions, childEnvironment } from "./child-env.ts";
import { PLACEHOLDER } from "./scrub.ts";

const PROXY_URL = "http://127.0.0.1:41234";
const CA_BUNDLE = "/tmp/svc-run/ca-bundle.pem";

function build(overrides: Partial<ChildEnvironmentOptions> = {}) {
  return childEnvironment({
    base: { PATH: "/usr/bin", HOME: "/home/dev" },
    proxyUrl: PROXY_URL,
    caBundlePath: CA_BUNDLE,
    placeholders: [],
    ...overrides,
  });
}

describe("childEnvironment", () => {
  it("keeps the rest of the base environment", () => {
    const { env, replaced } = build();
    expect(env.PATH).toBe("/usr/bin");
    expect(env.HOME).toBe("/home/dev");
    expect(replaced).toEqual([]);
  });

  it.each(["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"])("points %s at the proxy", (name) => {
    const { env } = build({ base: { [name]: "http://corporate.proxy:3128" } });
    expect(env[name]).toBe(PROXY_URL);
  });

  it("asks Node to honour the proxy variables", () => {
    expect(build().env.NODE_USE_ENV_PROXY).toBe("1");
  });

  it.each(["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"])(
    "points %s at the CA bundle",
    (name) => {
      const { env } = build({ base: { [name]: "/etc/ssl/other.pem" } });
      expect(env[name]).toBe(CA_BUNDLE);
    },
  );

  it("adds the Node preload to NODE_OPTIONS, quoted so that Node reads an awkward path whole", () => {
    expect(build({ nodePreload: "/opt/svc/node-preload.cjs" }).env.NODE_OPTIONS).toBe(
      '--require "/opt/svc/node-preload.cjs"',
    );
    const awkward = build({
      base: { NODE_OPTIONS: " --max-old-space-size=128 " },
      nodePreload: '/home/a b/"q"\\x/node-preload.cjs',
    });
    expect(awkward.env.NODE_OPTIONS).toBe(
      '--max-old-space-size=128 --require "/home/a b/\\"q\\"\\\\x/node-preload.cjs"',
    );
    expect(build().env.NODE_OPTIONS).toBeUndefined();
  });

  it("sends only local hosts around the proxy by default", () => {
    const { env } = build();
    expect(env.NO_PROXY).toBe("localhost,127.0.0.1,::1");
    expect(env.no_proxy).toBe("localhost,127.0.0.1,::1");
  });

  it("merges NO_PROXY and no_proxy in order, without duplicates, into both spellings", () => {
    const { env } = build({
      base: { NO_PROXY: "internal.test, .corp.test,localhost", no_proxy: ".corp.test,,10.0.0.0/8" },
    });
    const expected = "internal.test,.corp.test,localhost,10.0.0.0/8,127.0.0.1,::1";
    expect(env.NO_PROXY).toBe(expected);
    expect(env.no_proxy).toBe(expected);
  });

  it("removes ALL_PROXY in both spellings", () => {
    const { env } = build({
      base: { ALL_PROXY: "socks5://127.0.0.1:1080", all_proxy: "socks5h://127.0.0.1:1080" },
    });
    expect(env).not.toHaveProperty("ALL_PROXY");
    expect(env).not.toHaveProperty("all_proxy");
  });

  it("removes svc's master key variables", () => {
    const { env, replaced } = build({
      base: { SVC_MASTER_KEY: "k".repeat(44), SVC_MASTER_KEY_FILE: "/home/dev/.svc/master.key" },
    });
    expect(env).not.toHaveProperty("SVC_MASTER_KEY");
    expect(env).not.toHaveProperty("SVC_MASTER_KEY_FILE");
    expect(replaced).toEqual([]);
  });

  it("sets every placeholder, overriding a real key inherited from the parent", () => {
    const { env } = build({
      base: { OPENAI_API_KEY: "sk-proj-real-key-from-the-parent" },
      placeholders: ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"],
    });
    expect(env.OPENAI_API_KEY).toBe(PLACEHOLDER);
    expect(env.ANTHROPIC_API_KEY).toBe(PLACEHOLDER);
  });

  it("replaces every variable holding a secret, whole or inside a longer value, and names them", () => {
    const secret = "ghp_0123456789abcdefABCDEF";
    const { env, replaced } = build({
      base: {
        GITHUB_TOKEN: secret,
        GIT_REMOTE: `https://x-access-token:${secret}@github.com/org/repo.git`,
        EDITOR: "vim",
      },
      secrets: [secret],
    });
    expect(env.GITHUB_TOKEN).toBe(PLACEHOLDER);
    expect(env.GIT_REMOTE).toBe(PLACEHOLDER);
    expect(env.EDITOR).toBe("vim");
    expect(replaced).toEqual(["GITHUB_TOKEN", "GIT_REMOTE"]);
  });

  it("reports a secret found under a placeholder's name too", () => {
    const secret = "sk-proj-0123456789";
    const { env, replaced } = build({
      base: { OPENAI_API_KEY: secret },
      placeholders: ["OPENAI_API_KEY"],
      secrets: [secret],
    });
    expect(env.OPENAI_API_KEY).toBe(PLACEHOLDER);
    expect(replaced).toEqual(["OPENAI_API_KEY"]);
  });

  it("ignores secrets shorter than 8 characters", () => {
    const { env, replaced } = build({ base: { SHELL: "/bin/bash" }, secrets: ["bash", "1234567"] });
    expect(env.SHELL).toBe("/bin/bash");
    expect(replaced).toEqual([]);
  });

  it("does not modify the base environment", () => {
    const base = {
      PATH: "/usr/bin",
      HTTPS_PROXY: "http://corporate.proxy:3128",
      NO_PROXY: "internal.test",
      ALL_PROXY: "socks5://127.0.0.1:1080",
      SVC_MASTER_KEY: "k".repeat(44),
      OPENAI_API_KEY: "sk-proj-real-key-from-the-parent",
      GITHUB_TOKEN: "ghp_0123456789abcdefABCDEF",
    };
    const before = structuredClone(base);
    const { env } = build({
      base,
      placeholders: ["OPENAI_API_KEY"],
      secrets: ["ghp_0123456789abcdefABCDEF"],
    });
    expect(env).not.toBe(base);
    expect(base).toEqual(before);
  });
});

describe("connection defaults", () => {
  it("sets AWS_REGION from the connection unless the parent chose one", () => {
    const options = {
      proxyUrl: "http://127.0.0.1:1",
      caBundlePath: "/ca.pem",
      placeholders: ["AWS_SECRET_ACCESS_KEY"],
    };
    const fresh = childEnvironment({
      ...options,
      base: { AWS_SECRET_ACCESS_KEY: "real" },
      defaults: { AWS_REGION: "eu-west-1" },
    });
    expect(fresh.env.AWS_REGION).toBe("eu-west-1");
    expect(fresh.env.AWS_SECRET_ACCESS_KEY).toBe("svc-proxy-managed");
    const chosen = childEnvironment({
      ...options,
      base: { AWS_REGION: "us-east-2" },
      defaults: { AWS_REGION: "eu-west-1" },
    });
    expect(chosen.env.AWS_REGION).toBe("us-east-2");
  });
});
