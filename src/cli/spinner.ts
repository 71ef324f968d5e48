const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/** Back to the start of the line and erase it: redraws in place, and leaves nothing behind. */
const CLEAR_LINE = "\r\x1b[2K";

/**
 * One status line redrawn in place on a terminal (stderr). Lines printed through it appear above
 * the spinner. The text is cut to the terminal's width: a wrapped line could not be erased.
 */
export class Spinner {
  readonly #write: (text: string) => void;
  readonly #width: number;
  readonly #intervalMs: number;
  #text = "";
  #frame = 0;
  #timer?: NodeJS.Timeout;

  constructor(write: (text: string) => void, options: { width?: number; intervalMs?: number } = {}) {
    this.#write = write;
    // A terminal that does not know its size says 0.
    this.#width = options.width || 80;
    this.#intervalMs = options.intervalMs ?? 80;
  }

  /** Shows `text` next to the spinner, starting it when needed. */
  update(text: string): void {
    this.#text = text.length > this.#width - 3 ? `${text.slice(0, this.#width - 4)}…` : text;
    if (!this.#timer) {
      this.#timer = setInterval(() => this.#draw(), this.#intervalMs);
      // The spinner alone must not keep the process alive.
      this.#timer.unref();
    }
    this.#draw();
  }

  /** Prints a whole line above the spinner. */
  print(text: string): void {
    if (this.#timer) this.#write(CLEAR_LINE);
    this.#write(`${text}\n`);
    if (this.#timer) this.#draw();
  }

  /** Stops and erases the spinner line; safe to call more than once. */
  stop(): void {
    if (!this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#write(CLEAR_LINE);
  }

  #draw(): void {
    const frame = FRAMES[this.#frame++ % FRAMES.length];
    this.#write(`${CLEAR_LINE}${frame} ${this.#text}`);
  }
}
