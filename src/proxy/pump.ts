import { finished, type Readable, type Writable } from "node:stream";

/**
 * `source.pipe(destination)` with stream.pipeline's error handling: an error or early close on
 * either side destroys both, and `done` runs once, with the error if there was one. pipeline does
 * the same but also allocates an AbortController per call and, when it finishes, an AbortError with
 * its stack trace: a cost the proxy paid twice per request.
 */
export function pump(source: Readable, destination: Writable, done: (error?: Error) => void): void {
  let settled = false;
  const settle = (error?: Error | null) => {
    if (settled) return;
    settled = true;
    if (error) {
      source.destroy();
      destination.destroy();
    }
    done(error ?? undefined);
  };
  finished(source, (error) => {
    if (error) settle(error);
  });
  finished(destination, settle);
  source.pipe(destination);
}
