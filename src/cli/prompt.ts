import { InputCancelledError, InvalidInputError, type SvcError } from "../core/errors.ts";

/**
 * How the CLI asks a person for input. The terminal implementation uses @clack/prompts on stderr
 * (stdout stays clean for data); tests hand `main()` a scripted one through `CliIo.prompter`.
 */
export interface Prompter {
  /** Masked input; undefined when the person cancelled (Ctrl-C, Esc). */
  secret(message: string): Promise<string | undefined>;
  /** Yes/no; undefined when the person cancelled. */
  confirm(message: string): Promise<boolean | undefined>;
  /** Visible input that may be left empty (""); undefined when the person cancelled. */
  text(message: string): Promise<string | undefined>;
  /** The first line of standard input when it is not a terminal (a pipe or a file); "" at end of input. */
  readLine(): Promise<string>;
  /** All of standard input when it is not a terminal (several `KEY=value` lines), at most 64 KiB. */
  readAll(): Promise<string>;
}

/** The longest first line read from a pipe: far more than any key, small enough to hold. */
const MAX_LINE_BYTES = 64 * 1024;

// @clack/prompts is loaded on the first prompt: most commands never ask, and start faster without it.
export const terminalPrompter: Prompter = {
  async secret(message) {
    const { isCancel, password } = await import("@clack/prompts");
    const value = await password({
      message,
      output: process.stderr,
      validate: (input) => (input?.trim() ? undefined : "nothing entered; paste the key or press Ctrl-C"),
    });
    return isCancel(value) ? undefined : value;
  },
  async confirm(message) {
    const { confirm, isCancel } = await import("@clack/prompts");
    const value = await confirm({ message, initialValue: false, output: process.stderr });
    return isCancel(value) ? undefined : value;
  },
  async text(message) {
    const { isCancel, text } = await import("@clack/prompts");
    const value = await text({ message, output: process.stderr });
    return isCancel(value) ? undefined : (value ?? "");
  },
  readLine: () => readFirstLine(process.stdin),
  readAll: () => readAllInput(process.stdin),
};

/** Reads `stream` to its end; refuses more than 64 KiB. */
export async function readAllInput(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      const buffer = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      size += buffer.length;
      if (size > MAX_LINE_BYTES) throw new InvalidInputError("standard input is longer than 64 KiB");
      chunks.push(buffer);
    }
  } catch (error) {
    if (error instanceof InvalidInputError) throw error;
    throw new InvalidInputError(
      `cannot read standard input: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Reads up to the first newline of `stream` and stops reading there (the rest stays unread);
 * returns the line without its line ending. Refuses a line longer than 64 KiB.
 */
export function readFirstLine(stream: NodeJS.ReadableStream & { destroy?: () => void }): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error?: Error) => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.pause();
      stream.destroy?.();
      if (error) reject(error);
      else
        resolve(
          Buffer.concat(chunks)
            .toString("utf8")
            .replace(/\r?\n$/, ""),
        );
    };
    const onData = (chunk: Buffer | string) => {
      const buffer = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      const newline = buffer.indexOf(0x0a);
      const part = newline === -1 ? buffer : buffer.subarray(0, newline + 1);
      chunks.push(part);
      size += part.length;
      if (newline !== -1) finish();
      else if (size > MAX_LINE_BYTES)
        finish(new InvalidInputError("the first line of standard input is longer than 64 KiB"));
    };
    const onEnd = () => finish();
    const onError = (error: Error) =>
      finish(new InvalidInputError(`cannot read standard input: ${error.message}`));
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.resume();
  });
}

/** A cancelled prompt as the spec's error (exit 2). */
export function cancelled(what: string): SvcError {
  return new InputCancelledError(`${what} cancelled`);
}
