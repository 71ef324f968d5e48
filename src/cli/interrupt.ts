/**
 * Resolves on the first Ctrl-C (SIGINT) until disposed. While it listens, Node's default exit on
 * SIGINT is off so the command can clean up; it listens once, so a second Ctrl-C (a cleanup that
 * hangs) ends the process as usual.
 */
export function onInterrupt(): { interrupted: Promise<void>; dispose(): void } {
  let listener!: () => void;
  const interrupted = new Promise<void>((resolve) => {
    listener = resolve;
  });
  process.once("SIGINT", listener);
  return { interrupted, dispose: () => process.off("SIGINT", listener) };
}
