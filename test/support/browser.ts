import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";

/** Debian's Chromium (ARCHITECTURE.md); `SVC_CHROMIUM` points elsewhere. */
export const CHROMIUM = process.env.SVC_CHROMIUM ?? "/usr/bin/chromium";

/**
 * The flags ARCHITECTURE.md asks for. Playwright starts every browser on a fresh temporary
 * `--user-data-dir` of its own and deletes it on close.
 */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Screenshots are test artifacts: written on every run, for people to look at. */
export const SCREENSHOT_DIR = fileURLToPath(new URL("../artifacts/screenshots/", import.meta.url));

export const DESKTOP = { width: 1280, height: 800 };
export const NARROW = { width: 375, height: 740 };

/** Launches Chromium; a machine without it fails the tests (`.ci/run` installs it), never skips them. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install it with \`apt-get install -y chromium\` (.ci/run does)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS, timeout: 30_000 });
}

/** A new cookie jar (a separate "person"), desktop-sized and light unless told otherwise. */
export async function newContext(
  browser: Browser,
  options: { viewport?: { width: number; height: number }; colorScheme?: "light" | "dark" } = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({
    viewport: options.viewport ?? DESKTOP,
    colorScheme: options.colorScheme ?? "light",
    locale: "en-US",
    timezoneId: "UTC",
    reducedMotion: "reduce",
  });
  context.setDefaultTimeout(10_000);
  return context;
}

/**
 * Saves a screenshot as `test/artifacts/screenshots/<name>.png` (the whole page unless told
 * otherwise); returns its path. Toasts left over from earlier steps are dismissed first.
 */
export async function screenshot(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.evaluate(() => document.getElementById("toasts")?.replaceChildren());
  await page.screenshot({ path, fullPage: options.fullPage ?? true, animations: "disabled" });
  return path;
}

/**
 * Screenshots `page` as `<prefix>-narrow-light`, `-desktop-dark` and `-narrow-dark`, asserting at
 * each size that nothing is wider than the window; leaves the page desktop-sized and light.
 */
export async function screenshotVariants(page: Page, prefix: string): Promise<void> {
  for (const [suffix, viewport, colorScheme] of [
    ["narrow-light", NARROW, "light"],
    ["desktop-dark", DESKTOP, "dark"],
    ["narrow-dark", NARROW, "dark"],
  ] as const) {
    await page.setViewportSize(viewport);
    await page.emulateMedia({ colorScheme });
    await screenshot(page, `${prefix}-${suffix}`);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    if (width > viewport.width) throw new Error(`${prefix}-${suffix}: the page is ${width}px wide`);
  }
  await page.setViewportSize(DESKTOP);
  await page.emulateMedia({ colorScheme: "light" });
}

/** The dashboard session cookie of a context (undefined when signed out). */
export async function sessionCookie(context: BrowserContext, url: string): Promise<string | undefined> {
  const cookies = await context.cookies(url);
  return cookies.find((cookie) => cookie.name === "svc_session")?.value;
}
