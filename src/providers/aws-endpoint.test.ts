import { describe, expect, it } from "vitest";
import { awsEndpointOf } from "./aws-endpoint.ts";

describe("awsEndpointOf", () => {
  it.each([
    ["bedrock-runtime.us-east-1.amazonaws.com", "bedrock", "us-east-1", false],
    ["bedrock-agent-runtime.eu-west-3.amazonaws.com", "bedrock", "eu-west-3", false],
    ["s3.eu-central-1.amazonaws.com", "s3", "eu-central-1", true],
    ["my.dotted.bucket.s3.ap-southeast-2.amazonaws.com", "s3", "ap-southeast-2", true],
    ["bucket.s3.dualstack.us-west-2.amazonaws.com", "s3", "us-west-2", true],
    ["bucket.s3-us-west-2.amazonaws.com", "s3", "us-west-2", true],
    ["s3.amazonaws.com", "s3", "us-east-1", true],
    ["bucket.s3.amazonaws.com", "s3", "us-east-1", true],
    ["123456789012.s3-control.us-east-2.amazonaws.com", "s3", "us-east-2", true],
    ["dynamodb.us-gov-west-1.amazonaws.com", "dynamodb", "us-gov-west-1", false],
    ["sts.amazonaws.com", "sts", "us-east-1", false],
    ["iam.amazonaws.com", "iam", "us-east-1", false],
    ["abc123.execute-api.eu-north-1.amazonaws.com:443", "execute-api", "eu-north-1", false],
    ["lambda.fips.us-east-1.amazonaws.com", "lambda", "us-east-1", false],
    ["email.us-east-1.amazonaws.com", "ses", "us-east-1", false],
    ["s3.cn-north-1.amazonaws.com.cn", "s3", "cn-north-1", true],
  ])("%s signs for %s in %s", (host, service, region, s3) => {
    expect(awsEndpointOf(host)).toEqual({ service, region, s3 });
  });

  it("knows nothing of other hosts", () => {
    expect(awsEndpointOf("amazonaws.com.evil.example")).toBeUndefined();
    expect(awsEndpointOf("api.openai.com")).toBeUndefined();
    expect(awsEndpointOf("x..amazonaws.com")).toBeUndefined();
  });
});
