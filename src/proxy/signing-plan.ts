/**
 * The plan for a request to an aws_sigv4 provider: hash the body (up to SIGNED_BODY_LIMIT), ask
 * the daemon to sign, and send the request with the daemon's signature in place of the one the
 * child made with placeholder keys. The secret access key never reaches the proxy.
 */

import type { SignedRequest } from "../api/credentials.ts";
import {
  SIGNATURE_HEADERS,
  SIGNED_BODY_LIMIT,
  STREAMING_UNSIGNED_TRAILER,
  signRequestFor,
} from "../client/aws-signing.ts";
import { awsEndpointOf } from "../providers/aws-endpoint.ts";
import type { ProxyFailure } from "./proxy-errors.ts";
import type { InterceptedRequest, RequestPlan } from "./server.ts";

const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";

type Settled = Exclude<RequestPlan, { kind: "hash-body" }>;

export interface SigningPlanOptions {
  request: InterceptedRequest;
  /** `host[:port]` as the request URL has it (no port for 443). */
  authority: string;
  provider: string;
  connection: string | undefined;
  sign: (request: ReturnType<typeof signRequestFor>) => Promise<SignedRequest>;
  /** Builds the JSON refusal the child gets. */
  refuse: (failure: ProxyFailure, decision: string) => Settled;
  /** What to do when the daemon refuses to sign (the same answers as a failed resolve). */
  failed: (error: unknown) => Settled;
  done: (provider: string, connection: string) => Settled["done"];
}

function headerEntries(headers: InterceptedRequest["headers"]): [string, string][] {
  return Object.entries(headers).flatMap(([name, value]) =>
    value === undefined ? [] : [[name, Array.isArray(value) ? value.join(", ") : value] as [string, string]],
  );
}

export function signingPlan(options: SigningPlanOptions): RequestPlan {
  const { request, authority } = options;
  return {
    kind: "hash-body",
    limit: SIGNED_BODY_LIMIT,
    withHash: async (sha256) => {
      const s3 = awsEndpointOf(request.host)?.s3 ?? false;
      const declared = String(request.headers["x-amz-content-sha256"] ?? "");
      let payload = sha256;
      if (declared.startsWith("STREAMING-")) {
        // aws-chunked bodies: only the unsigned variant can pass, its chunks carry no signature.
        if (!s3 || declared !== STREAMING_UNSIGNED_TRAILER) {
          return options.refuse(
            {
              status: 400,
              code: "UnsupportedStreamingUpload",
              message: `svc: ${declared} (chunk-signed streaming upload) is not supported: the chunk signatures would need the secret; send the body whole or with an unsigned payload`,
            },
            "unsupported_streaming",
          );
        }
        payload = STREAMING_UNSIGNED_TRAILER;
      } else if (payload === undefined) {
        if (!s3) {
          return options.refuse(
            {
              status: 413,
              code: "RequestBodyTooLarge",
              message: `svc: the request body is larger than ${SIGNED_BODY_LIMIT / 1024 / 1024} MiB, the most svc hashes to sign a request to ${request.host}; only S3 accepts unsigned payloads`,
            },
            "body_too_large",
          );
        }
        payload = UNSIGNED_PAYLOAD;
      }
      let signed: SignedRequest;
      try {
        signed = await options.sign(
          signRequestFor(
            {
              method: request.method,
              host: authority,
              target: request.path,
              headers: headerEntries(request.headers),
            },
            payload,
            options.provider,
            options.connection,
          ),
        );
      } catch (error) {
        return options.failed(error);
      }
      const token = signed.headers["x-amz-security-token"];
      return {
        kind: "forward",
        setHeaders: { ...signed.headers, host: authority },
        removeHeaders: SIGNATURE_HEADERS,
        // The session token travels upstream and must never come back to the child.
        ...(token ? { secrets: [token] } : {}),
        done: options.done(signed.provider, signed.connection),
      };
    },
  };
}
