/**
 * Reads a request body far enough to hash it (a signed request's signature covers its payload):
 * the whole body when it fits in `limit` bytes, else the bytes read so far followed by the rest,
 * still streamed, with no hash. Either way the body is sent on unchanged.
 */
import { createHash } from "node:crypto";
import { PassThrough, Readable } from "node:stream";

export interface HashedBody {
  /** Hex SHA-256 of the whole body; undefined when it is longer than the limit. */
  sha256: string | undefined;
  /** The body to send upstream, from its first byte. */
  body: Readable;
}

export function hashBodyUpTo(source: Readable, limit: number): Promise<HashedBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      source.off("data", onData);
      source.off("end", onEnd);
      source.off("error", onError);
      source.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= limit) return;
      stop();
      source.pause();
      // Too long to hash here: what was read goes first, the rest streams behind it.
      const body = new PassThrough();
      for (const part of chunks) body.write(part);
      source.on("error", (error) => body.destroy(error));
      source.pipe(body);
      resolve({ sha256: undefined, body });
    };
    const onEnd = () => {
      stop();
      const whole = Buffer.concat(chunks);
      resolve({
        sha256: createHash("sha256").update(whole).digest("hex"),
        body: Readable.from(whole.length > 0 ? [whole] : []),
      });
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    const onClose = () => {
      stop();
      reject(new Error("the client closed the request before its body ended"));
    };
    source.on("data", onData);
    source.on("end", onEnd);
    source.on("error", onError);
    source.on("close", onClose);
  });
}

/** A request without a body: the SHA-256 of nothing. */
export function noBody(source: Readable): HashedBody {
  return { sha256: createHash("sha256").digest("hex"), body: source };
}
