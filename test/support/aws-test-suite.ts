/**
 * AWS's published SigV4 test suite (test/fixtures/aws-sigv4-test-suite, Apache-2.0): each case's
 * request parsed from its raw HTTP text, with the context and the expected results.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SUITE = fileURLToPath(new URL("../fixtures/aws-sigv4-test-suite/", import.meta.url));

export interface SuiteCase {
  name: string;
  context: {
    credentials: { access_key_id: string; secret_access_key: string; token?: string };
    normalize: boolean;
    region: string;
    service: string;
    sign_body: boolean;
    timestamp: string;
    omit_session_token?: boolean;
  };
  request: {
    method: string;
    path: string;
    query: string;
    headers: Record<string, string[]>;
    body: string;
    payloadHash: string;
  };
  canonicalRequest: string;
  stringToSign: string;
  signature: string;
}

/** `METHOD target HTTP/1.1`, `Name:value` lines (indented lines continue the previous one), blank line, body. */
function parseRequest(text: string): SuiteCase["request"] {
  const [head = "", ...rest] = text.split("\n\n");
  const body = rest.join("\n\n");
  const [requestLine = "", ...lines] = head.split("\n");
  const method = requestLine.slice(0, requestLine.indexOf(" "));
  const target = requestLine.slice(method.length + 1, requestLine.lastIndexOf(" "));
  const question = target.indexOf("?");
  const headers: Record<string, string[]> = {};
  let last: string[] | undefined;
  for (const line of lines) {
    if (line === "") continue;
    if (/^\s/.test(line) && last) {
      last[last.length - 1] += `\n${line}`;
      continue;
    }
    const colon = line.indexOf(":");
    const name = line.slice(0, colon);
    last = headers[name] ??= [];
    last.push(line.slice(colon + 1));
  }
  return {
    method,
    path: question === -1 ? target : target.slice(0, question),
    query: question === -1 ? "" : target.slice(question + 1),
    headers,
    body,
    payloadHash: createHash("sha256").update(body).digest("hex"),
  };
}

export function loadSuite(): SuiteCase[] {
  return readdirSync(SUITE, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map(({ name }) => {
      const read = (file: string) => readFileSync(join(SUITE, name, file), "utf8");
      return {
        name,
        context: JSON.parse(read("context.json")) as SuiteCase["context"],
        request: parseRequest(read("request.txt")),
        canonicalRequest: read("header-canonical-request.txt"),
        stringToSign: read("header-string-to-sign.txt"),
        signature: read("header-signature.txt").trim(),
      };
    });
}
