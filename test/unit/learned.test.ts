import { describe, expect, it } from 'vitest';
import { addLearnedVotes, DEFAULT_LEARNED_PARAMS, LearnedIndex } from '../../src/ranking/learned.js';
import { RRF_K } from '../../src/ranking/rrf.js';

const NOW = 1_800_000_000;
const event = (tool: string, caller = 'a', at = NOW) => ({ tool, caller, strength: 1, at });
const terms = (text: string) => text.split(' ');
const ALL = ['jira_create', 'github_pr_diff', 'plot', 'evil_send', 'gmail_send'];

describe('the learned list', () => {
  it('ranks the tools used after queries like this one, by their words, and ignores unlike ones', () => {
    const index = new LearnedIndex();
    index.add('open a jira ticket', terms('open jira ticket'), null, event('jira_create'));
    index.add('open a jira ticket', terms('open jira ticket'), null, event('jira_create', 'b'));
    index.add('what changed in this pr', terms('changed pr'), null, event('github_pr_diff'));
    const list = index.list(ALL, terms('open jira ticket'), undefined, NOW);
    expect(list.ranked.map(([tool]) => tool)).toEqual(['jira_create']);
    expect(list.events.get('jira_create')).toBe(2);
    expect(index.list(ALL, terms('weather in paris'), undefined, NOW).ranked).toEqual([]);
    // Only the candidates (what the other lists rank) are judged.
    expect(index.list(['github_pr_diff'], terms('open jira ticket'), undefined, NOW).ranked).toEqual([]);
  });

  it('finds past queries by meaning when their words differ, above the semantic floor only, among those sharing a word', () => {
    const index = new LearnedIndex();
    index.add('file a bug report', terms('file bug report'), [1, 0, 0], event('jira_create'));
    index.add('draw a chart of the report', terms('draw chart report'), [0, 1, 0], event('plot'));
    index.add('raise an issue', terms('raise issue'), [1, 0, 0], event('github_pr_diff'));
    const list = index.list(ALL, terms('report defect now'), [0.95, 0.05, 0], NOW);
    // Alike in meaning and sharing a word: counted; alike in meaning without a shared word, or sharing a word only: not.
    expect(list.ranked.map(([tool]) => tool)).toEqual(['jira_create']);
  });

  it('caps one caller’s evidence for a tool however many events it sends, and events decay', () => {
    const index = new LearnedIndex();
    for (let i = 0; i < 1000; i++) index.add('send mail', terms('send mail'), null, event('evil_send', 'flooder'));
    index.add('send mail', terms('send mail'), null, event('gmail_send', 'u1'));
    index.add('send mail', terms('send mail'), null, event('gmail_send', 'u2'));
    const list = index.list(ALL, terms('send mail'), undefined, NOW);
    expect(list.ranked[0]).toEqual(['evil_send', DEFAULT_LEARNED_PARAMS.callerCap]);
    expect(list.ranked[1]).toEqual(['gmail_send', 2]);
    index.add('send mail', terms('send mail'), null, event('gmail_send', 'u3'));
    expect(index.list(ALL, terms('send mail'), undefined, NOW).ranked[0]![0]).toBe('gmail_send');
    // An event one half-life old counts half.
    const old = new LearnedIndex();
    old.add('send mail', terms('send mail'), null, event('gmail_send', 'u1', NOW - DEFAULT_LEARNED_PARAMS.halfLifeSeconds));
    expect(old.list(ALL, terms('send mail'), undefined, NOW).ranked[0]![1]).toBeCloseTo(0.5, 6);
  });

  it('votes only for tools another list ranks, in proportion to their evidence', () => {
    const fused: [string, number][] = [
      ['a', 0.02],
      ['b', 0.015],
    ];
    const { fused: out, votes } = addLearnedVotes(
      fused,
      [
        ['unsupported', 10],
        ['b', 1],
      ],
      { weight: 1, evidenceFull: 2, k: RRF_K },
    );
    expect(votes.has('unsupported')).toBe(false);
    expect(out.map(([id]) => id)).toEqual(['b', 'a']);
    expect(votes.get('b')).toBeCloseTo(0.5 / (RRF_K + 1), 9);
    // Nothing learned that another list supports: the order stays.
    expect(addLearnedVotes(fused, [['unsupported', 10]]).fused).toEqual(fused);
  });
});
