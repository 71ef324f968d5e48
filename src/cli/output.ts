import pc from "picocolors";
import type { SvcError } from "../core/errors.ts";

export interface OutputOptions {
  json: boolean;
  quiet: boolean;
  color: boolean;
}

/** stdout carries data, stderr carries progress and errors (the `gh` convention). */
export class Output {
  readonly options: OutputOptions;
  readonly #stdout: (text: string) => void;
  readonly #stderr: (text: string) => void;
  readonly colors: ReturnType<typeof pc.createColors>;

  constructor(options: OutputOptions, stdout: (text: string) => void, stderr: (text: string) => void) {
    this.options = options;
    this.#stdout = stdout;
    this.#stderr = stderr;
    this.colors = pc.createColors(options.color);
  }

  /** Primary data: always printed, `--quiet` included. */
  line(text = ""): void {
    this.#stdout(`${text}\n`);
  }

  json(value: unknown): void {
    this.#stdout(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** Banners and status messages: suppressed by `--quiet` and `--json`. */
  status(text: string): void {
    if (this.options.quiet || this.options.json) return;
    this.#stderr(`${text}\n`);
  }

  /** A summary line above data rows (stdout): suppressed by `--quiet` and `--json`, unlike the rows. */
  header(text: string): void {
    if (this.options.quiet || this.options.json) return;
    this.#stdout(`${text}\n`);
  }

  /** Something the person must see to go on (a link to open): stderr, even with `--quiet` or `--json`. */
  notice(text: string): void {
    this.#stderr(`${text}\n`);
  }

  warn(text: string): void {
    this.#stderr(`${this.colors.yellow("warning:")} ${text}\n`);
  }

  error(error: SvcError): void {
    if (this.options.json) {
      // One line, so it can end a stream of JSON lines (`login --json`).
      this.#stdout(`${JSON.stringify(error.toBody())}\n`);
      return;
    }
    this.#stderr(`${this.colors.red("error:")} ${error.message}\n`);
  }

  /** A table of rows with aligned columns. */
  table(headers: string[], rows: string[][]): void {
    const widths = headers.map((header, column) =>
      Math.max(header.length, ...rows.map((row) => (row[column] ?? "").length)),
    );
    const format = (cells: string[]) =>
      cells
        .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!)))
        .join("  ")
        .trimEnd();
    this.line(this.colors.bold(format(headers)));
    for (const row of rows) this.line(format(row));
  }

  /** Key/value pairs, one per line. */
  fields(pairs: Array<[string, string | undefined]>): void {
    const width = Math.max(...pairs.map(([key]) => key.length));
    for (const [key, value] of pairs) {
      if (value !== undefined) this.line(`${this.colors.dim(`${key}:`.padEnd(width + 1))} ${value}`);
    }
  }
}
