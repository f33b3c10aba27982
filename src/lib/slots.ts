/**
 * At most `limit` tasks running at once, started in the order they ask: the push's stores side by
 * side (catalog/catalog-service.ts's slices as they are made, store/tool-store.ts's transactions).
 */
export class Slots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {
    if (!(limit >= 1)) throw new Error(`Slots needs a limit of at least 1, got ${limit}`);
  }

  /** Starts `task` once a place is free; resolves, once it has started, to the task's own promise. */
  async start<T>(task: () => Promise<T>): Promise<{ done: Promise<T> }> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    const done = (async () => task())().finally(() => this.release());
    done.catch(() => {}); // the caller reads the failure when it awaits `done`; until then it is not unhandled
    return { done };
  }

  /** Runs `task` once a place is free, to its end. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    return (await this.start(task)).done;
  }

  /** Hands the place on to the next task waiting, or frees it. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }
}
