import { describe, expect, it } from "vitest";
import { type FetchFunction, fetchWithCredentials } from "./credential-fetch.ts";

interface Sent {
  url: string;
  method: string;
  redirect: string;
  headers: Record<string, string>;
  body: string | null;
  init?: RequestInit;
}

/** A transport that records what it was asked and answers from `routes` (`url → Response`), else 200. */
function fakeTransport(routes: Record<string, () => Response> = {}) {
  const sent: Sent[] = [];
  const transport: FetchFunction = async (input, init) => {
    const request = input as Request;
    sent.push({
      url: request.url,
      method: request.method,
      redirect: request.redirect,
      headers: Object.fromEntries(request.headers),
      body: request.body ? await request.text() : null,
      ...(init ? { init } : {}),
    });
    return routes[request.url]?.() ?? new Response("ok");
  };
  return { sent, transport };
}

const redirect = (status: number, location: string) => () =>
  new Response(null, { status, headers: { location } });

/** The credential belongs on api.example.com only. */
const headersFor = async (url: URL): Promise<Record<string, string>> =>
  url.hostname === "api.example.com" ? { "x-api-key": "secret" } : {};

describe("fetchWithCredentials", () => {
  it("adds the credential where it belongs, replacing a header of the same name", async () => {
    const { sent, transport } = fakeTransport();
    const fetch = fetchWithCredentials(headersFor, transport);
    await fetch("https://api.example.com/v1", {
      headers: { "x-api-key": "placeholder", accept: "text/plain" },
    });
    expect(sent[0]!.headers).toEqual({ "x-api-key": "secret", accept: "text/plain" });
  });

  it("hands a request that gets no credential to the transport as it is, redirect mode included", async () => {
    const { sent, transport } = fakeTransport();
    const dispatcher = { dispatch() {} };
    const fetch = fetchWithCredentials(headersFor, transport);
    await fetch("https://other.example.com/", { dispatcher } as RequestInit);
    expect(sent).toEqual([
      expect.objectContaining({ url: "https://other.example.com/", redirect: "follow", headers: {} }),
    ]);
    expect(sent[0]!.init).toEqual({ dispatcher });
  });

  it("follows a redirect itself, deciding each hop: the key stays on its host, cookies stay on the origin", async () => {
    const { sent, transport } = fakeTransport({
      "https://api.example.com/a": redirect(302, "/b"),
      "https://api.example.com/b": redirect(301, "https://cdn.example.net/file"),
    });
    const fetch = fetchWithCredentials(headersFor, transport);
    const response = await fetch("https://api.example.com/a", { headers: { cookie: "c=1", accept: "*/*" } });
    expect(await response.text()).toBe("ok");
    expect(sent.map((hop) => [hop.url, hop.redirect, hop.headers])).toEqual([
      ["https://api.example.com/a", "manual", { "x-api-key": "secret", cookie: "c=1", accept: "*/*" }],
      ["https://api.example.com/b", "manual", { "x-api-key": "secret", cookie: "c=1", accept: "*/*" }],
      ["https://cdn.example.net/file", "follow", { accept: "*/*" }],
    ]);
  });

  it("turns a 303 into a GET without the body, and re-sends a buffered body on a 307", async () => {
    const { sent, transport } = fakeTransport({
      "https://api.example.com/put": redirect(303, "/done"),
      "https://api.example.com/post": redirect(307, "/again"),
    });
    const fetch = fetchWithCredentials(headersFor, transport);
    await fetch("https://api.example.com/put", {
      method: "PUT",
      body: "data",
      headers: { "content-type": "text/plain" },
    });
    await fetch("https://api.example.com/post", { method: "POST", body: "data" });
    expect(sent.map((hop) => [hop.method, hop.body, hop.headers["content-type"]])).toEqual([
      ["PUT", "data", "text/plain"],
      ["GET", null, undefined],
      ["POST", "data", "text/plain;charset=UTF-8"],
      ["POST", "data", "text/plain;charset=UTF-8"],
    ]);
  });

  it("returns a 307 to a streamed upload instead of following it (a stream cannot be sent twice)", async () => {
    const { sent, transport } = fakeTransport({ "https://api.example.com/up": redirect(307, "/elsewhere") });
    const fetch = fetchWithCredentials(headersFor, transport);
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("streamed"));
        controller.close();
      },
    });
    const response = await fetch("https://api.example.com/up", {
      method: "POST",
      body,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(307);
    expect(sent.map((hop) => hop.body)).toEqual(["streamed"]);
  });

  it("leaves manual redirects to the caller and gives up after 20 hops", async () => {
    const { sent, transport } = fakeTransport({ "https://api.example.com/loop": redirect(302, "/loop") });
    const fetch = fetchWithCredentials(headersFor, transport);
    expect((await fetch("https://api.example.com/loop", { redirect: "manual" })).status).toBe(302);
    expect(sent).toHaveLength(1);
    await expect(fetch("https://api.example.com/loop")).rejects.toThrow(/more than 20 redirects/);
    expect(sent).toHaveLength(1 + 21);
  });
});
