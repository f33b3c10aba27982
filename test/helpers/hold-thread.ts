/** Holds this thread for `ms` without yielding, as a slow item of work does. */
export function holdThread(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}
