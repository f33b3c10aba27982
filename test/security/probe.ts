/**
 * `npm run probe:security`: the gateway's security suite (attacks.ts) against a live service on
 * loopback, printed as a table of attack, expected and seen. Exits 1 when any row fails.
 */
import { ATTACKS, startSecurityContext } from './attacks.js';

const ctx = await startSecurityContext();
const rows: string[] = ['| # | finding | attack | expected | seen | |', '|---|---|---|---|---|---|'];
let failed = 0;
const cell = (value: string) => value.replace(/\|/g, '\\|').replace(/\n/g, ' ');
for (const [index, attack] of ATTACKS.entries()) {
  let outcome: { ok: boolean; seen: string };
  try {
    outcome = await attack.run(ctx);
  } catch (error) {
    outcome = { ok: false, seen: `threw: ${(error as Error).message}` };
  }
  if (!outcome.ok) failed += 1;
  rows.push(
    `| ${index + 1} | ${cell(attack.finding)} | ${cell(attack.attack)} | ${cell(attack.expected)} | ${cell(outcome.seen)} | ${outcome.ok ? 'ok' : '**FAIL**'} |`,
  );
}
await ctx.close();
console.log(rows.join('\n'));
console.log(`\n${ATTACKS.length - failed} of ${ATTACKS.length} held`);
process.exit(failed > 0 ? 1 : 0);
