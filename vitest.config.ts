import { defineConfig } from "vitest/config";

// Under CI, also write a JSON report that .ci/run turns into its closing "N passed, N failed" line.
const ciReport = process.env.SVC_TEST_REPORT;

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ciReport ? ["default", ["json", { outputFile: ciReport }]] : ["default"],
  },
});
