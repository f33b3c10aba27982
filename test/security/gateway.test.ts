/**
 * Every row of the gateway's security suite (attacks.ts) as a test, against a live service on
 * loopback with hostile upstreams of the suite's own. The rows run in order: later ones build on
 * the upstream's state the earlier ones left (a quarantined tool, a second upstream).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTACKS, startSecurityContext, type SecurityContext } from './attacks.js';

describe('security: the gateway against an attacker', () => {
  let ctx: SecurityContext;
  beforeAll(async () => {
    ctx = await startSecurityContext();
  }, 120_000);
  afterAll(async () => {
    await ctx?.close();
  });

  for (const attack of ATTACKS) {
    it(`${attack.finding}: ${attack.attack} -> ${attack.expected}`, async () => {
      const { ok, seen } = await attack.run(ctx);
      expect(ok, seen).toBe(true);
    });
  }
});
