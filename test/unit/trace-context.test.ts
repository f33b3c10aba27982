// @store-independent: pure functions (vitest.config.ts runs it once, not again on PostgreSQL).
import { describe, expect, it } from 'vitest';
import { traceContext, traceId } from '../../src/lib/trace-context.js';

const PARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('traceContext', () => {
  it('takes a well-formed traceparent and tracestate, and tells the trace id', () => {
    const context = traceContext({ traceparent: ` ${PARENT} `, tracestate: 'congo=t61rcWkgMzE, rojo=00f067aa0ba902b7' });
    expect(context).toEqual({ traceparent: PARENT, tracestate: 'congo=t61rcWkgMzE, rojo=00f067aa0ba902b7' });
    expect(traceId(context!)).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(traceContext({ traceparent: PARENT, tracestate: 'tenant@vendor=x' })?.tracestate).toBe('tenant@vendor=x');
  });

  it.each([
    ['absent', undefined],
    ['not a string', 42],
    ['repeated (an array)', [PARENT, PARENT]],
    ['a zero trace id', '00-00000000000000000000000000000000-00f067aa0ba902b7-01'],
    ['a zero parent id', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'],
    ['upper-case hex', PARENT.toUpperCase()],
    ['another version', PARENT.replace(/^00/, 'ff')],
    ['a field more', `${PARENT}-extra`],
    ['a line break inside', `00-4bf92f3577b34da6a3ce929d0e0e4736\n-00f067aa0ba902b7-01`],
  ])('drops a traceparent that is %s', (_label, traceparent) => {
    expect(traceContext({ traceparent, tracestate: 'congo=t61rcWkgMzE' })).toBeUndefined();
  });

  it.each([
    ['longer than 512 characters', `a=${'x'.repeat(511)}`],
    ['more than 32 members', Array.from({ length: 33 }, (_, index) => `k${index}=v`).join(',')],
    ['a member without a value separator', 'congo'],
    ['an upper-case key', 'Congo=1'],
    ['a control character', 'congo=a\u0001b'],
  ])('keeps the traceparent but drops a tracestate with %s', (_label, tracestate) => {
    expect(traceContext({ traceparent: PARENT, tracestate })).toEqual({ traceparent: PARENT });
  });
});
