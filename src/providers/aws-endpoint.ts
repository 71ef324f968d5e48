/**
 * What an `*.amazonaws.com` host says about signing: the service's signing name and the region,
 * read from the host the way AWS's endpoint patterns lay them out
 * (`<service>.<region>.amazonaws.com`, `<bucket>.s3.<region>.amazonaws.com`, the legacy
 * `s3-<region>` form, `dualstack`/`fips` variants, and global endpoints such as `iam.amazonaws.com`,
 * which sign for us-east-1).
 */

export interface AwsEndpoint {
  /** The signing name (`bedrock` for `bedrock-runtime`, `s3` for access points and S3 Control). */
  service: string;
  region: string;
  /**
   * S3 signs the path as sent (no normalisation, no second encoding), wants the payload hash in
   * `x-amz-content-sha256`, and accepts UNSIGNED-PAYLOAD for bodies svc does not hash.
   */
  s3: boolean;
}

const SUFFIXES = [".amazonaws.com", ".amazonaws.com.cn"];
const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d+$/;
/** Endpoint variants that sit between the service and the region. */
const VARIANTS = new Set(["dualstack", "fips"]);
/** Hosts whose first label is not the signing name. */
const SIGNING_NAMES: Readonly<Record<string, string>> = {
  "bedrock-runtime": "bedrock",
  "bedrock-agent": "bedrock",
  "bedrock-agent-runtime": "bedrock",
  email: "ses",
};
/** Where a global endpoint (no region in the host) signs. */
const GLOBAL_REGION = "us-east-1";

function signingName(label: string): string {
  if (label === "s3" || label.startsWith("s3-")) return "s3";
  return SIGNING_NAMES[label] ?? label;
}

/** The signing service and region of an AWS host (port allowed), or undefined for other hosts. */
export function awsEndpointOf(host: string): AwsEndpoint | undefined {
  const name = host.toLowerCase().replace(/:\d+$/, "");
  const suffix = SUFFIXES.find((candidate) => name.endsWith(candidate));
  if (!suffix) return undefined;
  const labels = name.slice(0, -suffix.length).split(".");
  if (labels.some((label) => label === "")) return undefined;
  for (let index = labels.length - 1; index >= 0; index--) {
    const label = labels[index]!;
    const legacyS3 = /^s3-(.+)$/.exec(label);
    if (legacyS3 && REGION.test(legacyS3[1]!)) return { service: "s3", region: legacyS3[1]!, s3: true };
    if (!REGION.test(label)) continue;
    let serviceIndex = index - 1;
    while (serviceIndex >= 0 && VARIANTS.has(labels[serviceIndex]!)) serviceIndex--;
    if (serviceIndex < 0) return undefined;
    const service = signingName(labels[serviceIndex]!);
    return { service, region: label, s3: service === "s3" };
  }
  const service = signingName(labels[labels.length - 1]!);
  return { service, region: GLOBAL_REGION, s3: service === "s3" };
}
