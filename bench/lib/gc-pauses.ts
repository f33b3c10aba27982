/**
 * This process's GC pauses as perf_hooks reports them ('gc' entries: each pause's start, length and
 * kind), for the benches that time the service in their own process.
 */
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};

export interface GcPause {
  start: number;
  ms: number;
  kind: string;
}

const round1 = (ms: number) => Math.round(ms * 10) / 10;

/** The pauses from now until `stop` (which takes the entries not yet delivered too). */
export function watchGc() {
  const pauses: GcPause[] = [];
  const take = (entries: PerformanceEntry[]) => {
    for (const entry of entries) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind ?? 0;
      pauses.push({ start: entry.startTime, ms: entry.duration, kind: GC_KINDS[kind] ?? `kind ${kind}` });
    }
  };
  const observer = new PerformanceObserver((list) => take(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  return {
    pauses: pauses as readonly GcPause[],
    stop: () => {
      take(observer.takeRecords());
      observer.disconnect();
    },
    /** Count, total and longest pause (ms, one decimal) of each kind. */
    byKind() {
      const kinds: Record<string, { count: number; total_ms: number; max_ms: number }> = {};
      for (const { ms, kind } of pauses) {
        const at = (kinds[kind] ??= { count: 0, total_ms: 0, max_ms: 0 });
        at.count++;
        at.total_ms = round1(at.total_ms + ms);
        at.max_ms = round1(Math.max(at.max_ms, ms));
      }
      return kinds;
    },
    /** The pauses that overlapped [start, end], as `kind ms`. */
    overlapping: (start: number, end: number) =>
      pauses.filter((pause) => pause.start < end && pause.start + pause.ms > start).map(({ ms, kind }) => `${kind} ${round1(ms)}`),
  };
}
