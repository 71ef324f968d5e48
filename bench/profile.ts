import { readdirSync, readFileSync } from "node:fs";
import { join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { round } from "./stats.ts";

/** The parts of a V8 `.cpuprofile` (written by `node --cpu-prof`) this analysis reads. */
interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileEntry {
  name: string;
  ms: number;
  percent: number;
}

export interface ProfileSummary {
  file: string;
  /** Sampled time, idle excluded. */
  busy_ms: number;
  idle_ms: number;
  /** Self time grouped by where the code lives: a package, a src/ file, node:internal, native, GC. */
  self_by_location: ProfileEntry[];
  /** Self time of single functions. */
  self_by_function: ProfileEntry[];
  /** Time with the function anywhere on the stack (synchronous parts only; async continuations are not linked). */
  inclusive: ProfileEntry[];
}

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The `.cpuprofile` that process `pid` wrote into `directory` (the name embeds the pid). */
export function findProfile(directory: string, pid: number): string | undefined {
  const name = readdirSync(directory).find(
    (file) => file.endsWith(".cpuprofile") && file.split(".").includes(String(pid)),
  );
  return name ? join(directory, name) : undefined;
}

function location(url: string, functionName: string): string {
  if (!url) {
    if (functionName === "(garbage collector)") return "(gc)";
    if (functionName === "(idle)" || functionName === "(program)" || functionName === "(root)")
      return functionName;
    return "(native)";
  }
  if (url.startsWith("node:")) return "node:internal";
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  const modules = path.lastIndexOf(`node_modules${sep}`);
  if (modules >= 0) {
    const rest = path.slice(modules + "node_modules".length + 1).split(sep);
    return `npm:${rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  return path.startsWith(ROOT) ? path.slice(ROOT.length) : path;
}

/** Functions whose inclusive time the report gives, when they appear in the profile. */
const INCLUSIVE_OF = [
  "verifyPopToken",
  "parseToken",
  "assertSignature",
  "assertClaimsMatch",
  "bodySha256Hex",
  "evaluateReadiness",
  "roundTrip",
  "checkIntegrity",
  "probe",
  "list",
  "get",
  "executeQuery",
  "serialize",
  "hookRunner",
  "parseOrReply",
];

export function analyzeProfile(file: string, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    // timeDeltas[i] is the time before sample i; attributing it to sample i is V8's own convention.
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }

  let idleUs = 0;
  let busyUs = 0;
  const byLocation = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idleUs += us;
      continue;
    }
    busyUs += us;
    const where = location(url, functionName);
    byLocation.set(where, (byLocation.get(where) ?? 0) + us);
    const fn = `${functionName || "(anonymous)"} ${where}${url ? `:${lineNumber + 1}` : ""}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    // Each distinct frame on this node's stack gets the sample once.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame;
      if (!INCLUSIVE_OF.includes(frame.functionName)) continue;
      const key = `${frame.functionName} ${location(frame.url, frame.functionName)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }

  const entries = (map: Map<string, number>, limit: number): ProfileEntry[] =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, us]) => ({ name, ms: round(us / 1000), percent: round((100 * us) / busyUs) }));
  return {
    file,
    busy_ms: round(busyUs / 1000),
    idle_ms: round(idleUs / 1000),
    self_by_location: entries(byLocation, top),
    self_by_function: entries(byFunction, top),
    inclusive: entries(inclusive, top),
  };
}
