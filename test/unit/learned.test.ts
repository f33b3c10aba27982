import { describe, expect, it } from 'vitest';
import { addLearnedVotes, cosine, DEFAULT_LEARNED_PARAMS, dot, LearnedIndex, quantized, splitRequests } from '../../src/ranking/learned.js';
import { seededRandom } from '../../src/eval/seeded-random.js';
import { RRF_K } from '../../src/ranking/rrf.js';

const NOW = 1_800_000_000;
const event = (tool: string, caller = 'a', at = NOW) => ({ tool, caller, strength: 1, at });
const terms = (text: string) => text.split(' ');
const ALL = ['jira_create', 'github_pr_diff', 'plot', 'evil_send', 'gmail_send'];
/** A catalog's words as its index gives them (ToolWords): what each tool holds, each word's weight (0: no tool holds it). */
const catalogWords = (holds: Record<string, string[]>, weight: ReadonlyMap<string, number>) => (tools: readonly string[], words: readonly string[]) => ({
  held: new Map(tools.map((tool) => [tool, new Set((holds[tool] ?? []).filter((word) => words.includes(word)))])),
  weight: new Map(words.map((word) => [word, weight.get(word) ?? 0])),
});
/** The list without the knobs that read the catalog's words (anchor, gained words, twins): each test turns on the one it judges. */
const UNHELD = { ...DEFAULT_LEARNED_PARAMS, anchorPower: 0, gainedPower: 0, twinSimilarity: 0, twinSwap: 0, twinLocal: 0, gainedPooled: 0 };

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

  it('holds past queries’ vectors in bytes, their cosine with a new query within 0.004 of the floats’', () => {
    const random = seededRandom(7);
    const gaussian = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    let worst = 0;
    for (let pair = 0; pair < 500; pair++) {
      const past = Float32Array.from({ length: 512 }, gaussian);
      // Half the pairs alike (the new query near the past one), half unrelated.
      const query = Float32Array.from(past, (value) => (pair % 2 ? value + 0.5 * gaussian() : gaussian()));
      const norm = Math.hypot(...query);
      const unitQuery = query.map((value) => value / norm);
      worst = Math.max(worst, Math.abs(dot(unitQuery, quantized(past)) - cosine(unitQuery, past)));
    }
    expect(worst).toBeLessThan(0.004);
    expect(worst).toBeGreaterThan(0);
    expect(quantized([0, 0, 0]).scale).toBe(0);
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

  it('keeps the other callers’ events of a tool that one caller floods, and one caller alone its newest', () => {
    const index = new LearnedIndex();
    index.add('read a file from disk', terms('read file disk'), null, event('read_file', 'u1'));
    index.add('read a file from disk', terms('read file disk'), null, event('read_file', 'u2'));
    // Events for the same tool after unrelated queries: they fill its window, but only their caller's share of it.
    for (let i = 0; i < 500; i++) index.add(`zz ${i}`, terms(`zz q${i}`), null, event('read_file', 'flooder'));
    const list = index.list(['read_file'], terms('read file disk'), undefined, NOW);
    expect(list.ranked).toEqual([['read_file', 2]]);
    expect(list.events.get('read_file')).toBe(2);
    // A caller alone: its newest events are the window (the oldest one is pushed out).
    const alone = new LearnedIndex();
    alone.add('read a file from disk', terms('read file disk'), null, event('read_file', 'u1'));
    for (let i = 0; i < 31; i++) alone.add(`zz ${i}`, terms(`zz q${i}`), null, event('read_file', 'u1'));
    expect(alone.list(['read_file'], terms('read file disk'), undefined, NOW).ranked).toEqual([['read_file', 1]]);
    alone.add('zz last', terms('zz last'), null, event('read_file', 'u1'));
    expect(alone.list(['read_file'], terms('read file disk'), undefined, NOW).ranked).toEqual([]);
  });

  it('keeps of an index its newest events within a size (keepNewest), and only the past queries they follow', () => {
    const index = new LearnedIndex();
    // 40 events for one tool: its window holds the newest 32, the 8 oldest queries follow nothing.
    for (let i = 0; i < 40; i++) index.add(`read file ${i}`, terms(`read file n${i}`), [1, i, 2], event('read_file', `u${i % 3}`, NOW + i));
    index.add('open a jira ticket', terms('open jira ticket'), null, event('jira_create', 'a', NOW + 50));
    index.add('open a jira ticket', terms('open jira ticket'), null, event('jira_create', 'b', NOW + 51));
    expect(index.size).toBe(41);
    const whole = index.keepNewest(Number.POSITIVE_INFINITY);
    expect(whole.size).toBe(33);
    expect(whole.eventCount).toBe(34);
    expect(whole.bytes).toBeLessThan(index.bytes);
    // The same votes as before for what it kept.
    for (const query of ['read file n39', 'read file n10', 'open jira ticket'])
      expect(whole.list(['read_file', 'jira_create'], terms(query), undefined, NOW + 60)).toEqual(
        index.list(['read_file', 'jira_create'], terms(query), undefined, NOW + 60),
      );
    // Half the size: the newest events (the jira ones and the last reads), never an older one without the newer.
    const half = index.keepNewest(whole.bytes / 2);
    expect(half.bytes).toBeLessThanOrEqual(whole.bytes / 2);
    expect(half.eventCount).toBeGreaterThan(10);
    expect(half.eventCount).toBeLessThan(24);
    expect(half.list(['jira_create'], terms('open jira ticket'), undefined, NOW + 60).events.get('jira_create')).toBe(2);
    expect(half.list(['read_file'], terms('read file n39'), undefined, NOW + 60).ranked).toHaveLength(1);
    expect(half.list(['read_file'], terms('read file n10'), undefined, NOW + 60).ranked).toEqual([]);
    const keptReads = Array.from({ length: 40 }, (_, i) => half.list(['read_file'], terms(`read file n${i}`), undefined, NOW + 60).ranked.length > 0);
    const first = keptReads.indexOf(true);
    expect(first).toBeGreaterThan(8);
    expect(keptReads.slice(first).every(Boolean)).toBe(true);
    // Nothing fits: an empty index.
    expect(index.keepNewest(10).eventCount).toBe(0);
  });

  it('counts of one caller’s events for a tool only its closest few (callerBest): many loose matches are not their sum', () => {
    const index = new LearnedIndex();
    // One close use by an honest caller; twenty loose ones (two words of three shared) by another.
    index.add('send the weekly report mail', terms('send weekly report mail'), null, event('gmail_send', 'u1'));
    for (let i = 0; i < 20; i++) index.add(`send report x${i}`, terms(`send report x${i}`), null, event('evil_send', 'flooder'));
    const query = terms('send weekly report mail');
    const all = index.list(['gmail_send', 'evil_send'], query, undefined, NOW, { ...UNHELD, minSimilarity: 0.05, callerBest: 0 });
    const best = index.list(['gmail_send', 'evil_send'], query, undefined, NOW, { ...UNHELD, minSimilarity: 0.05, callerBest: 2 });
    const score = (list: typeof all, tool: string) => list.ranked.find(([name]) => name === tool)?.[1] ?? 0;
    expect(score(all, 'gmail_send')).toBeCloseTo(1, 6);
    expect(score(best, 'gmail_send')).toBeCloseTo(1, 6);
    // Two of the loose uses count, not twenty.
    expect(score(best, 'evil_send')).toBeGreaterThan(0);
    expect(score(best, 'evil_send')).toBeLessThan(score(all, 'evil_send') / 5);
    expect(best.ranked[0]![0]).toBe('gmail_send');
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

  it('holds a past query’s vote to the words that tied it to the tool (anchorPower) and to this query’s words the tool lacks (gainedPower)', () => {
    const index = new LearnedIndex();
    index.add('area of a circle of radius 5', terms('area circle radius'), null, event('circle_area'));
    const holds: Record<string, string[]> = { circle_area: ['area', 'circle', 'radius'], triangle_area: ['area', 'triangle', 'base', 'height'] };
    const weight = new Map([
      ['area', 1],
      ['circle', 2],
      ['radius', 2],
      ['triangle', 2],
      ['base', 1],
      ['height', 1],
      ['round', 0],
    ]);
    const toolWords = catalogWords(holds, weight);
    const loose = { ...UNHELD, minSimilarity: 0.1, similarityPower: 1 };
    const vote = (query: string, params: typeof loose) =>
      index.list(['circle_area', 'triangle_area'], terms(query), undefined, NOW, params, toolWords).ranked.find(([tool]) => tool === 'circle_area')?.[1] ?? 0;
    const sibling = 'area triangle radius';
    const plain = vote(sibling, loose);
    expect(plain).toBeGreaterThan(0);
    // The sibling's request keeps "area" and "radius" of the words (area 1, circle 2, radius 2) that tied it: 3/5 of them.
    expect(vote(sibling, { ...loose, anchorPower: 1 })).toBeCloseTo(plain * (3 / 5), 9);
    expect(vote(sibling, { ...loose, anchorPower: 2 })).toBeCloseTo(plain * (3 / 5) ** 2, 9);
    // Its own "triangle" (weight 2 of 5), which neither the tool nor the past query holds, holds the vote back too.
    expect(vote(sibling, { ...loose, gainedPower: 1 })).toBeCloseTo(plain * (1 - 2 / 5), 9);
    // A repeat in the same words keeps its whole vote; a word no tool holds ("round", weight 0) costs nothing.
    const repeat = vote('area circle radius round', loose);
    expect(vote('area circle radius round', { ...loose, anchorPower: 2, gainedPower: 2 })).toBeCloseTo(repeat, 9);
    // Without the tools' words (a source that cannot tell them) nothing holds a loose match to its tool: only near-repeats count.
    expect(index.list(['circle_area'], terms(sibling), undefined, NOW, { ...loose, anchorPower: 2 }).ranked).toEqual([]);
    expect(index.list(['circle_area'], terms(sibling), undefined, NOW, loose).ranked[0]![1]).toBeCloseTo(plain, 9);
    expect(index.list(['circle_area'], terms('area circle radius'), undefined, NOW, { ...loose, anchorPower: 2 }).ranked[0]![1]).toBeCloseTo(1, 9);
  });

  it('with gainedPooled, reads the words gained against all the tool’s counted past queries, not the one judged', () => {
    const index = new LearnedIndex();
    index.add('a music event in york', terms('music event york'), null, event('find_events'));
    index.add('a theater event on monday', terms('theater event monday'), null, event('find_events'));
    const holds: Record<string, string[]> = { find_events: ['find', 'event', 'city'], book_parking: ['book', 'parking'] };
    const weight = new Map([
      ['music', 1],
      ['event', 1],
      ['monday', 1],
      ['theater', 1],
      ['parking', 1],
      ['york', 0],
    ]);
    const toolWords = catalogWords(holds, weight);
    const loose = { ...UNHELD, minSimilarity: 0.1, similarityPower: 1 };
    const vote = (query: string, params: typeof loose) =>
      index.list(['find_events', 'book_parking'], terms(query), undefined, NOW, params, toolWords).ranked.find(([tool]) => tool === 'find_events')?.[1] ?? 0;
    const query = 'music event monday';
    const plain = vote(query, loose);
    expect(plain).toBeGreaterThan(0);
    // Judged one past query at a time, each lacks a third of this query's words ("monday", then "music").
    expect(vote(query, { ...loose, gainedPower: 1 })).toBeCloseTo(plain * (2 / 3), 9);
    // Pooled, another past request for the tool carried each: nothing is gained.
    expect(vote(query, { ...loose, gainedPower: 1, gainedPooled: 1 })).toBeCloseTo(plain, 9);
    // A word none of them carried still holds the vote back ("parking", another tool's word).
    const other = 'music event parking';
    const otherPlain = vote(other, loose);
    expect(vote(other, { ...loose, gainedPower: 1, gainedPooled: 1 })).toBeCloseTo(otherPlain * (2 / 3), 9);
  });

  it('lets twins share a vote (twinSimilarity by words, twinCosine by embeddings), an event once per twin group, and twins’ equal evidence share its votes', () => {
    const index = new LearnedIndex();
    index.add('gcd of 12 and 18', terms('gcd 12 18'), null, event('gcd'));
    const alike: Record<string, { words: number; meaning: number }> = {
      'gcd math.gcd': { words: 0.93, meaning: 0.97 },
      'gcd lcm': { words: 0.4, meaning: 0.8 },
      'lcm math.gcd': { words: 0.35, meaning: 0.8 },
    };
    const toolLikeness = () => (a: string, b: string) => alike[[a, b].sort().join(' ')] ?? { words: 0, meaning: 0 };
    const candidates = ['math.gcd', 'gcd', 'lcm'];
    const ranked = (params: Partial<typeof DEFAULT_LEARNED_PARAMS>, at = index) =>
      at
        .list(candidates, terms('gcd 12 18'), undefined, NOW, { ...UNHELD, ...params }, undefined, toolLikeness)
        .ranked.map(([tool, evidence]) => [tool, Number(evidence.toFixed(9))]);
    expect(ranked({})).toEqual([['gcd', 1]]);
    expect(ranked({ twinSimilarity: 0.9 })).toEqual([
      ['gcd', 1],
      ['math.gcd', 1],
    ]);
    expect(ranked({ twinCosine: 0.95 })).toEqual(ranked({ twinSimilarity: 0.9 }));
    // Not twins under the threshold: a sibling keeps its own (no) evidence.
    expect(ranked({ twinSimilarity: 0.3 }).map(([tool]) => tool)).toEqual(['gcd', 'lcm', 'math.gcd']);
    expect(ranked({ twinSimilarity: 0.95 })).toEqual([['gcd', 1]]);
    expect(index.list(candidates, terms('gcd 12 18'), undefined, NOW, { ...DEFAULT_LEARNED_PARAMS, twinSimilarity: 0.9 }).tiesShare).toBe(false);
    // One past query that led to both twins counts once for each.
    const both = new LearnedIndex();
    both.add('gcd of 12 and 18', terms('gcd 12 18'), null, event('gcd'));
    both.add('gcd of 12 and 18', terms('gcd 12 18'), null, event('math.gcd'));
    expect(ranked({ twinSimilarity: 0.9 }, both)).toEqual(ranked({ twinSimilarity: 0.9 }));
    // Equal evidence shares its places' votes: twins keep the order the other lists gave them.
    const fused: [string, number][] = [
      ['math.gcd', 0.0301],
      ['gcd', 0.03],
    ];
    const learned: [string, number][] = [
      ['gcd', 1],
      ['math.gcd', 1],
    ];
    const options = { weight: 4, evidenceFull: 2, k: RRF_K };
    expect(addLearnedVotes(fused, learned, options).fused.map(([id]) => id)).toEqual(['gcd', 'math.gcd']);
    const shared = addLearnedVotes(fused, learned, { ...options, tiesShare: true });
    expect(shared.fused.map(([id]) => id)).toEqual(['math.gcd', 'gcd']);
    expect(shared.votes.get('gcd')).toBeCloseTo((2 * (1 / (RRF_K + 1) + 1 / (RRF_K + 2))) / 2, 12);
    expect(shared.votes.get('math.gcd')).toBe(shared.votes.get('gcd'));
  });

  it('with twinSwap, lets a group of twins take the places its members reached in the order the other lists gave them', () => {
    const index = new LearnedIndex();
    index.add('gcd of 12 and 18', terms('gcd 12 18'), null, event('gcd'));
    const toolLikeness = () => (a: string, b: string) => ({ words: [a, b].sort().join(' ') === 'gcd math.gcd' ? 0.93 : 0.2, meaning: 0 });
    const params = { ...UNHELD, twinSimilarity: 0.9, twinSwap: 1 };
    const list = index.list(['math.gcd', 'gcd', 'lcm'], terms('gcd 12 18'), undefined, NOW, params, undefined, toolLikeness);
    // No shared events: only the tool used has evidence, and its twins are named.
    expect(list.ranked.map(([tool]) => tool)).toEqual(['gcd']);
    expect(list.twinGroups?.map((group) => [...group].sort())).toEqual([['gcd', 'math.gcd']]);
    expect(index.list(['math.gcd', 'gcd', 'lcm'], terms('gcd 12 18'), undefined, NOW, UNHELD, undefined, toolLikeness).twinGroups).toBeUndefined();
    const fused: [string, number][] = [
      ['math.gcd', 0.03],
      ['lcm', 0.0295],
      ['gcd', 0.029],
    ];
    const options = { weight: 4, evidenceFull: 2, k: RRF_K };
    // The vote lifts `gcd` above its twin; with the groups, `math.gcd` (first by the other lists) takes the place reached.
    expect(addLearnedVotes(fused, list.ranked, options).fused.map(([id]) => id)).toEqual(['gcd', 'math.gcd', 'lcm']);
    // twinLocal: the likeness is read over the words in play only (this query's and the counted past queries').
    const asked: (readonly string[] | undefined)[] = [];
    const recording = (_tools: readonly string[], words?: readonly string[]) => {
      asked.push(words);
      return toolLikeness();
    };
    index.add('greatest common divisor of 4 and 6', terms('greatest common divisor 4 6'), null, event('gcd'));
    index.list(['math.gcd', 'gcd', 'lcm'], terms('gcd 12 18 divisor'), undefined, NOW, { ...params, minSimilarity: 0.1 }, undefined, recording);
    index.list(['math.gcd', 'gcd', 'lcm'], terms('gcd 12 18 divisor'), undefined, NOW, { ...params, minSimilarity: 0.1, twinLocal: 1 }, undefined, recording);
    expect(asked[0]).toBeUndefined();
    expect([...asked[1]!].sort()).toEqual(['12', '18', '4', '6', 'common', 'divisor', 'gcd', 'greatest']);
    const swapped = addLearnedVotes(fused, list.ranked, { ...options, twinGroups: list.twinGroups! });
    expect(swapped.fused.map(([id]) => id)).toEqual(['math.gcd', 'gcd', 'lcm']);
    expect(swapped.fused[0]![1]).toBeCloseTo(0.029 + 2 / (RRF_K + 1), 12);
    expect(swapped.votes.get('math.gcd')).toBeCloseTo(0.029 + 2 / (RRF_K + 1) - 0.03, 12);
    expect(swapped.votes.get('gcd')).toBeCloseTo(0.03 - 0.029, 12);
  });

  it('never makes twins of a tool and one an agent passed over for it, shown both after a query like this one', () => {
    const toolLikeness = () => (a: string, b: string) => ({
      words: [a, b].sort().join(' ') === 'github_create_issue jira_create_issue' ? 0.9 : 0.1,
      meaning: 0,
    });
    const params = { ...UNHELD, twinSimilarity: 0.8, twinSwap: 1 };
    const candidates = ['github_create_issue', 'jira_create_issue', 'plot'];
    const told = new LearnedIndex();
    told.add('open an issue', terms('open issue'), null, { ...event('jira_create_issue'), passedOver: ['github_create_issue', 'plot'] });
    expect(told.list(candidates, terms('open issue'), undefined, NOW, params, undefined, toolLikeness).twinGroups).toEqual([]);
    // Not told what was shown, or shown only after unlike queries: twins as before.
    const untold = new LearnedIndex();
    untold.add('open an issue', terms('open issue'), null, event('jira_create_issue'));
    expect(untold.list(candidates, terms('open issue'), undefined, NOW, params, undefined, toolLikeness).twinGroups?.map((group) => [...group].sort())).toEqual(
      [['github_create_issue', 'jira_create_issue']],
    );
    untold.add('plot the sales', terms('plot sales'), null, { ...event('jira_create_issue'), passedOver: ['github_create_issue'] });
    expect(untold.list(candidates, terms('open issue'), undefined, NOW, params, undefined, toolLikeness).twinGroups).toHaveLength(1);
    // The learned vote then puts the tool agents chose above the one the other lists preferred.
    const fused: [string, number][] = [
      ['github_create_issue', 0.03],
      ['jira_create_issue', 0.029],
    ];
    const list = told.list(candidates, terms('open issue'), undefined, NOW, params, undefined, toolLikeness);
    const options = { weight: 4, evidenceFull: 2, k: RRF_K, twinGroups: list.twinGroups! };
    expect(addLearnedVotes(fused, list.ranked, options).fused[0]![0]).toBe('jira_create_issue');
    const untoldList = untold.list(candidates, terms('open issue'), undefined, NOW, params, undefined, toolLikeness);
    expect(addLearnedVotes(fused, untoldList.ranked, { ...options, twinGroups: untoldList.twinGroups! }).fused[0]![0]).toBe('github_create_issue');
    // A caller naming the twin as passed over a thousand times undoes the pairing, no more: its evidence stays capped.
    const flooded = new LearnedIndex();
    for (let i = 0; i < 1000; i++)
      flooded.add('open an issue', terms('open issue'), null, { ...event('jira_create_issue', 'flooder'), passedOver: ['github_create_issue'] });
    const floodedList = flooded.list(candidates, terms('open issue'), undefined, NOW, params, undefined, toolLikeness);
    expect(floodedList.twinGroups).toEqual([]);
    expect(floodedList.ranked).toEqual([['jira_create_issue', DEFAULT_LEARNED_PARAMS.callerCap]]);
  });

  it('splits a task into its requests: sentences, and clauses a new step opens', () => {
    expect(
      splitRequests(
        'Check the temperature of building X. Then, calculate the surface tension; finally monitor vital signs and then book it. Also get the film details?',
      ),
    ).toEqual(['Check the temperature of building X.', 'calculate the surface tension;', 'monitor vital signs', 'book it.', 'get the film details?']);
    expect(splitRequests('gcd of 12 and 18')).toEqual(['gcd of 12 and 18']);
    // Words that merely contain a step's word do not split.
    expect(splitRequests('the thenar muscle, nextcloud files')).toEqual(['the thenar muscle, nextcloud files']);
  });

  it('finds a past task that shares one request with this one (segmentMin), by the catalog’s words, and keeps the vote to that request’s tool', () => {
    const index = new LearnedIndex();
    const past = 'check the temperature of smart building B7. Then, translate the report to german.';
    index.add(past, terms('check temperature smart building b7 translate report german'), null, event('getBuildingTemperature'));
    index.add(past, terms('check temperature smart building b7 translate report german'), null, event('translateToGerman'));
    const holds: Record<string, string[]> = {
      getBuildingTemperature: ['temperature', 'smart', 'building'],
      translateToGerman: ['translate', 'german'],
      monitorVitalSigns: ['monitor', 'vital', 'signs'],
    };
    // b7, k9 and a patient's name are values no tool holds: they weigh nothing.
    const weight = new Map([
      ['check', 0.5],
      ['temperature', 2],
      ['smart', 2],
      ['building', 2],
      ['translate', 2],
      ['german', 2],
      ['report', 1],
      ['monitor', 2],
      ['vital', 2],
      ['signs', 2],
    ]);
    const toolWords = catalogWords(holds, weight);
    const now = 'check the temperature of smart building K9. Then, monitor the vital signs of Ada.';
    const candidates = ['monitorVitalSigns', 'translateToGerman', 'getBuildingTemperature'];
    const nowTerms = terms('check temperature smart building k9 monitor vital signs ada');
    const params = { ...DEFAULT_LEARNED_PARAMS, anchorPower: 2, gainedPower: 1, gainedPooled: 0, minSimilarity: 0.35 };
    // As a whole the two tasks are unlike (under 0.35): nothing is learned.
    expect(index.list(candidates, nowTerms, undefined, NOW, params, toolWords).ranked).toEqual([]);
    // By the request they share: the temperature tool only (the translation's words are not in this task).
    const segmented = { ...params, segmentMin: 0.6 };
    const list = index.list(candidates, nowTerms, undefined, NOW, segmented, toolWords, undefined, now);
    expect(list.ranked.map(([tool]) => tool)).toEqual(['getBuildingTemperature']);
    // Without the catalog's words (a store-path ranking) requests are not read: nothing would hold the vote to the shared request's tool.
    expect(index.list(candidates, nowTerms, undefined, NOW, segmented, undefined, undefined, now).ranked).toEqual([]);
    // The other request's words ("monitor vital signs": 6 of 12.5) hold the vote back, unless only the tool's request is judged (gainedLocal).
    const whole = list.ranked[0]![1];
    const local = index.list(candidates, nowTerms, undefined, NOW, { ...segmented, gainedLocal: 1 }, toolWords, undefined, now).ranked[0]![1];
    expect(whole).toBeCloseTo(local * (1 - 6 / 12.5), 9);
    expect(local).toBeCloseTo(1, 9);
  });
});
