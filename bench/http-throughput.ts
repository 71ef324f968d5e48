import autocannon from "autocannon";
import { round } from "./stats.ts";

export interface ThroughputOptions {
  baseUrl: string;
  path: string;
  connections: number;
  durationSeconds: number;
  /** Returns the Authorization header value for one request; called for every request. */
  authorize?: () => string;
  /** Default GET without a body; a body is sent as JSON. */
  method?: "GET" | "POST";
  body?: string;
}

export interface Throughput {
  path: string;
  connections: number;
  duration_s: number;
  rps: number;
  total: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  errors: number;
  timeouts: number;
  status_codes: Record<string, number>;
}

/** Keep-alive load on one route with autocannon (in this process; the daemon runs in another). */
export async function measureThroughput(options: ThroughputOptions): Promise<Throughput> {
  const { authorize } = options;
  const request: autocannon.Request = { method: options.method ?? "GET", path: options.path };
  if (options.body !== undefined) {
    request.body = options.body;
    request.headers = { "content-type": "application/json" };
  }
  if (authorize) {
    request.setupRequest = (req) => {
      req.headers = { ...req.headers, authorization: authorize() };
      return req;
    };
  }
  const result = await autocannon({
    url: options.baseUrl,
    connections: options.connections,
    duration: options.durationSeconds,
    pipelining: 1,
    requests: [request],
  });
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count;
  return {
    path: options.path,
    connections: options.connections,
    duration_s: options.durationSeconds,
    rps: round(result.requests.average, 0),
    total: result.requests.total,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    status_codes: statusCodes,
  };
}
