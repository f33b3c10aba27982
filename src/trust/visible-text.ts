/**
 * Characters a model reads but a person reviewing a tool definition does not see: Unicode format
 * characters (zero-width, bidi controls), the tag block, runs of variation selectors (each can carry
 * a byte), private-use code points, ANSI escape sequences and other control characters. The scanner
 * (scan-tool.ts) reports them; `stripInvisible` removes them so what an agent reads is what a
 * reviewer saw; `showInvisible` spells them out as escapes so no report ever carries them raw.
 */

/** What kind of hidden character a code point is, or undefined for an ordinary one. */
export type HiddenKind =
  | 'bidi' // U+202A-202E, U+2066-2069: reorder what is displayed (Trojan Source)
  | 'mark' // U+200E/200F, U+061C: direction marks, harmless beside right-to-left text
  | 'zero_width' // U+200B-200D, U+2060-2064, U+FEFF, U+180E: invisible, split words to dodge filters
  | 'format' // every other Unicode Cf code point
  | 'soft_hyphen' // U+00AD: invisible unless a line breaks there; common in copied text
  | 'tag' // U+E0000-E007F: invisible ASCII twins, a whole hidden sentence
  | 'variation_selector' // U+FE00-FE0F, U+E0100-E01EF: legitimate one at a time after a base
  | 'private_use' // U+E000-F8FF, planes 15-16: no meaning a reviewer can see
  | 'filler' // U+3164, U+FFA0: Hangul fillers, letters that draw nothing
  | 'escape' // U+001B, U+009B: start ANSI sequences that rewrite a terminal
  | 'control'; // other C0/C1 controls and DEL (tab, newline and carriage return are text)

/**
 * Every code unit that may start a hidden character. Surrogates are included so astral characters
 * (tags, supplementary selectors, private-use planes) reach the exact check; emoji pass through it.
 * One test of this rules out nearly every string of a real catalog.
 */
export const MAYBE_HIDDEN =
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\ue000-\uf8ff\ud800-\udfff]/;

/** Unicode Cf code points outside the BMP ranges named above (Unicode 15.1). */
const ASTRAL_FORMAT: readonly (readonly [number, number])[] = [
  [0x110bd, 0x110bd],
  [0x110cd, 0x110cd],
  [0x13430, 0x1343f],
  [0x1bca0, 0x1bca3],
  [0x1d173, 0x1d17a],
];

export function hiddenKind(cp: number): HiddenKind | undefined {
  if (cp < 0x20) return cp === 0x09 || cp === 0x0a || cp === 0x0d ? undefined : cp === 0x1b ? 'escape' : 'control';
  if (cp < 0x7f) return undefined;
  if (cp <= 0x9f) return cp === 0x9b ? 'escape' : 'control';
  if (cp === 0xad) return 'soft_hyphen';
  if (cp < 0x0600) return undefined;
  if (cp < 0x2000) {
    if (cp === 0x061c) return 'mark';
    if ((cp >= 0x0600 && cp <= 0x0605) || cp === 0x06dd || cp === 0x070f || cp === 0x0890 || cp === 0x0891 || cp === 0x08e2) {
      return 'format';
    }
    return cp === 0x180e ? 'zero_width' : undefined;
  }
  if (cp <= 0x206f) {
    if (cp >= 0x200b && cp <= 0x200d) return 'zero_width';
    if (cp === 0x200e || cp === 0x200f) return 'mark';
    if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) return 'bidi';
    if (cp >= 0x2060 && cp <= 0x2064) return 'zero_width';
    if (cp >= 0x206a) return 'format';
    return undefined;
  }
  if (cp === 0x3164 || cp === 0xffa0) return 'filler';
  if (cp >= 0xe000 && cp <= 0xf8ff) return 'private_use';
  if (cp >= 0xfe00 && cp <= 0xfe0f) return 'variation_selector';
  if (cp === 0xfeff) return 'zero_width';
  if (cp >= 0xfff9 && cp <= 0xfffb) return 'format';
  if (cp < 0x10000) return undefined;
  if (cp >= 0xe0000 && cp <= 0xe007f) return 'tag';
  if (cp >= 0xe0100 && cp <= 0xe01ef) return 'variation_selector';
  if (cp >= 0xf0000) return (cp & 0xfffe) === 0xfffe ? undefined : 'private_use';
  for (const [from, to] of ASTRAL_FORMAT) if (cp >= from && cp <= to) return 'format';
  return undefined;
}

/**
 * The length of the ANSI escape sequence starting at `at` (an ESC or CSI character), so it is
 * removed or shown whole: a CSI (`ESC [` params final), an OSC or string command (`ESC ]` ... BEL or
 * ST), or a two-character escape. Bounded, so a stray ESC never swallows the rest of the text.
 */
export function escapeLength(text: string, at: number): number {
  const first = text.charCodeAt(at);
  let i = at + 1;
  if (first === 0x1b) {
    const next = text.charCodeAt(i);
    if (Number.isNaN(next)) return 1;
    if (next === 0x5b)
      i += 1; // '[': CSI
    else if (next === 0x5d || next === 0x50 || next === 0x58 || next === 0x5e || next === 0x5f) {
      // OSC, DCS, SOS, PM, APC: up to BEL or ESC '\'
      const end = Math.min(text.length, at + 512);
      for (let j = i + 1; j < end; j++) {
        const c = text.charCodeAt(j);
        if (c === 0x07) return j + 1 - at;
        if (c === 0x1b && text.charCodeAt(j + 1) === 0x5c) return j + 2 - at;
      }
      return 2;
    } else return next >= 0x20 && next <= 0x7e ? 2 : 1;
  }
  // CSI body: parameter and intermediate bytes, then one final byte.
  const end = Math.min(text.length, i + 64);
  for (let j = i; j < end; j++) {
    const c = text.charCodeAt(j);
    if (c >= 0x40 && c <= 0x7e) return j + 1 - at;
    if (c < 0x20 || c > 0x3f) return j - at;
  }
  return end - at;
}

function isBase(cp: number): boolean {
  return cp > 0x20 && hiddenKind(cp) === undefined;
}

/**
 * `text` without hidden characters: every Unicode format character, tag characters, private-use
 * code points, Hangul fillers, ANSI escape sequences (whole), C0/C1 controls other than tab, newline
 * and carriage return, and variation selectors except the first one right after a visible base
 * character (emoji and ideographic variants keep their look; a run that smuggles bytes does not).
 * Returns `text` itself when nothing was removed.
 */
export function stripInvisible(text: string): string {
  if (!MAYBE_HIDDEN.test(text)) return text;
  let out = '';
  let kept = 0; // start of the pending run of ordinary characters
  let previous = 0; // last code point kept
  let i = 0;
  while (i < text.length) {
    const cp = text.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    const kind = hiddenKind(cp);
    if (kind === undefined) {
      previous = cp;
      i += width;
      continue;
    }
    if (kind === 'variation_selector' && isBase(previous)) {
      previous = cp; // a selector is not a base: the next one in a run goes
      i += width;
      continue;
    }
    out += text.slice(kept, i);
    i += kind === 'escape' ? escapeLength(text, i) : width;
    kept = i;
  }
  return kept === 0 ? text : out + text.slice(kept);
}

/**
 * `value` with `stripInvisible` applied to every string in it, object keys included. Unchanged
 * parts keep their identity, so a clean definition costs no copy and `visibleDeep(v) === v` says
 * it was clean. A key that only differs from another by hidden characters loses to the visible one.
 */
export function visibleDeep<T>(value: T): T {
  return visibleValue(value) as T;
}

function visibleValue(value: unknown): unknown {
  if (typeof value === 'string') return stripInvisible(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = visibleValue(value[i]);
      if (item !== value[i] && copy === undefined) copy = value.slice(0, i);
      if (copy !== undefined) copy.push(item);
    }
    return copy ?? value;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  let changed = false;
  const cleaned = entries.map(([key, item]) => {
    const visibleKey = stripInvisible(key);
    const visibleItem = visibleValue(item);
    if (visibleKey !== key || visibleItem !== item) changed = true;
    return [key, visibleKey, visibleItem] as const;
  });
  if (!changed) return value;
  const out: Record<string, unknown> = {};
  const taken = new Set(entries.map(([key]) => key));
  for (const [key, visibleKey, item] of cleaned) {
    if (visibleKey !== key && taken.has(visibleKey)) continue;
    taken.add(visibleKey);
    // defineProperty: a key such as "__proto__" stays data instead of replacing the prototype.
    Object.defineProperty(out, visibleKey, { value: item, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function hex(cp: number): string {
  return cp <= 0xffff ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\u{${cp.toString(16)}}`;
}

/**
 * `text` with every hidden character, line break and lone surrogate written as an escape
 * (`\u200b`, `\u{e0041}`, `\n`), so a report shows what is there without carrying it.
 */
export function showInvisible(text: string): string {
  let out = '';
  let kept = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    let shown: string | undefined;
    let width = 1;
    if (unit === 0x0a) shown = '\\n';
    else if (unit === 0x0d) shown = '\\r';
    else if (unit === 0x09) shown = '\\t';
    else if (unit === 0x2028 || unit === 0x2029) shown = hex(unit);
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        const cp = text.codePointAt(i)!;
        width = 2;
        if (hiddenKind(cp) !== undefined) shown = hex(cp);
      } else shown = hex(unit);
    } else if (unit >= 0xdc00 && unit <= 0xdfff) shown = hex(unit);
    else if (hiddenKind(unit) !== undefined) shown = hex(unit);
    if (shown !== undefined) {
      out += text.slice(kept, i) + shown;
      kept = i + width;
    }
    i += width - 1;
  }
  return kept === 0 ? text : out + text.slice(kept);
}
