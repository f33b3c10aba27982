import { describe, expect, it } from 'vitest';
import { planStepUp } from '../../src/upstream/oauth.js';

describe('planStepUp (a 403 insufficient_scope, SEP-2350)', () => {
  it('without a configured scope asks for the union of the held scope and the challenge', () => {
    expect(planStepUp(null, 'mcp:tools', 'files:read')).toEqual({ ask: 'mcp:tools files:read', missing: 'files:read' });
    expect(planStepUp(null, 'mcp:tools files:read', 'files:read  files:write\tmcp:tools')).toEqual({
      ask: 'mcp:tools files:read files:write',
      missing: 'files:write',
    });
    expect(planStepUp(null, undefined, 'files:read')).toEqual({ ask: 'files:read', missing: 'files:read' });
  });

  it('within a configured scope asks for exactly that scope; beyond it asks for nothing and names what was beyond', () => {
    expect(planStepUp('mcp:tools files:read', 'mcp:tools', 'files:read')).toEqual({ ask: 'mcp:tools files:read', missing: 'files:read' });
    // A token the authorization server gave more than asked is not asked for more again.
    expect(planStepUp('mcp:tools files:read', 'mcp:tools admin', 'files:read')).toEqual({ ask: 'mcp:tools files:read', missing: 'files:read' });
    expect(planStepUp('mcp:tools', 'mcp:tools', 'files:read admin mcp:tools')).toEqual({
      refused: 'the upstream asked for scope "files:read admin" beyond the configured scope "mcp:tools": not requested (widen auth.scope to allow it)',
    });
  });

  it('a token that holds the challenged scope is not replaced', () => {
    expect(planStepUp(null, 'mcp:tools files:read', 'files:read')).toEqual({
      refused: 'the upstream answered 403 insufficient_scope for scope "files:read", which its token holds: not requested again',
      held: true,
    });
  });

  it("refuses a challenge whose scope is missing, malformed or too long, without repeating the upstream's text", () => {
    const invalid = 'the upstream answered 403 insufficient_scope without naming a valid scope';
    for (const challenged of [undefined, '', '   ', 'files:read "quoted"', 'back\\slash', 'ünïcode', 'x'.repeat(1_025)])
      expect(planStepUp(null, 'mcp:tools', challenged)).toEqual({ refused: invalid });
    const long = Array.from({ length: 120 }, (_, index) => `scope:${index}`).join(' ');
    expect(planStepUp(null, long, 'files:read')).toEqual({
      refused: 'the upstream asked for scope "files:read": with the token\'s scope it passes 1024 characters, not requested',
    });
  });
});
