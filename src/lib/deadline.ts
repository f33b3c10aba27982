/**
 * `work`'s outcome if it settles within `ms`, else a rejection with `timeout()`. The work itself
 * is not cancelled (a model call completes into its cache, a query is bounded by its own
 * deadline); a late failure of it is not an unhandled rejection.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  work.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(timeout()), Math.max(0, ms));
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
