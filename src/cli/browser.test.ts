import { describe, expect, it } from "vitest";
import { hasDisplay } from "./browser.ts";

describe("hasDisplay", () => {
  it("needs DISPLAY or WAYLAND_DISPLAY where xdg-open is the opener", () => {
    expect(hasDisplay({}, "linux")).toBe(false);
    expect(hasDisplay({ DISPLAY: "" }, "linux")).toBe(false);
    expect(hasDisplay({ DISPLAY: ":0" }, "linux")).toBe(true);
    expect(hasDisplay({ WAYLAND_DISPLAY: "wayland-0" }, "freebsd")).toBe(true);
  });

  it("assumes one on macOS and Windows", () => {
    expect(hasDisplay({}, "darwin")).toBe(true);
    expect(hasDisplay({}, "win32")).toBe(true);
  });
});
