/**
 * The longest wait of this process's event loop while something runs: a ticker every `everyMs`
 * records the largest gap between its ticks. `stop()` ends it and gives that gap in ms.
 */
export function watchEventLoopGap(everyMs: number): { stop(): number } {
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, everyMs);
  return {
    stop() {
      clearInterval(ticker);
      return longest;
    },
  };
}
