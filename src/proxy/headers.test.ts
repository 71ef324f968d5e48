import { describe, expect, it } from "vitest";
import { headersForChild, headersFromRaw } from "./headers.ts";

const raw = (...pairs: string[]) => pairs.map((item) => Buffer.from(item, "latin1"));

describe("an upstream answer's headers as the child gets them", () => {
  it("keeps repeated headers (two Set-Cookie lines stay two) and lower-cases names", () => {
    const headers = headersFromRaw(
      raw("Set-Cookie", "a=1", "Content-Type", "text/plain", "set-cookie", "b=2", "X-Note", "caf\u00e9"),
    );
    expect(headers).toEqual({
      "set-cookie": ["a=1", "b=2"],
      "content-type": "text/plain",
      "x-note": "caf\u00e9",
    });
  });

  it("drops hop-by-hop headers and replaces the secret in every value, repeated ones included", () => {
    const secret = "sk-live-0123456789abcdef";
    const headers = headersFromRaw(
      raw(
        "Connection",
        "keep-alive",
        "Keep-Alive",
        "timeout=5",
        "Transfer-Encoding",
        "chunked",
        "X-Echo",
        `Bearer ${secret}`,
        "Set-Cookie",
        `k=${secret}`,
        "Set-Cookie",
        "plain=1",
      ),
    );
    expect(headersForChild(headers, [secret])).toEqual({
      "x-echo": "Bearer svc-proxy-managed",
      "set-cookie": ["k=svc-proxy-managed", "plain=1"],
    });
  });
});
